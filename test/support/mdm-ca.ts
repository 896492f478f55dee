// A test MDM's certificate authority, made at run time with the real `openssl`: a root, an
// issuing CA under it (with the extensions a test gives it), CAs under that one, device
// certificates with a subjectAltName URI, a subject serialNumber and a CN, and a revocation list
// made by `openssl ca -revoke` / `-gencrl`; a subjectAltName as raw DER, for names openssl's
// config cannot write.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateWireGuardKeyPair } from '../../src/wireguard/keys.js';
import type { TestPortal } from './test-portal.js';
import { timeLimit } from './until.js';

export interface DeviceCertificateFiles {
  readonly certificate: string;
  readonly key: string;
  readonly certificatePem: string;
}

/** When a revocation list says it was made and will be replaced, and the file it is written to (default `issuing.crl`). */
export interface CrlTimes {
  readonly thisUpdate?: Date;
  readonly nextUpdate?: Date;
  readonly file?: string;
}

/** A time as `openssl ca -crl_lastupdate` takes it: YYYYMMDDHHMMSSZ. */
function opensslTime(time: Date): string {
  return `${time.toISOString().replace(/[-:T]/g, '').slice(0, 14)}Z`;
}

/** An issuing CA's extensions as openssl's config writes them, unless a test gives others. */
export const CA_EXTENSIONS: readonly string[] = [
  'basicConstraints=critical,CA:TRUE',
  'keyUsage=critical,keyCertSign,cRLSign',
];

export class MdmCa {
  readonly directory: string;
  readonly name: string;

  private constructor(directory: string, name: string) {
    this.directory = directory;
    this.name = name;
  }

  /** A root and an issuing CA under it, in a fresh folder; the issuing CA with `issuingExtensions`. */
  static make(name = 'Test MDM', issuingExtensions: readonly string[] = CA_EXTENSIONS): MdmCa {
    const directory = mkdtempSync(path.join(tmpdir(), 'mdm-ca-'));
    const ca = new MdmCa(directory, name);
    ca.#openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'root.key',
      '-subj',
      `/CN=${name} Root`,
      '-days',
      '30',
      '-out',
      'root.pem',
    ]);
    writeFileSync(path.join(directory, 'ca.ext'), `${issuingExtensions.join('\n')}\n`);
    ca.#openssl([
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'issuing.key',
      '-subj',
      `/CN=${name} Issuing CA`,
      '-out',
      'issuing.csr',
    ]);
    ca.#signIssuingCsr('ca.ext', 'issuing.pem');
    writeFileSync(path.join(directory, 'index.txt'), '');
    writeFileSync(path.join(directory, 'crlnumber'), '01\n');
    writeFileSync(
      path.join(directory, 'ca.cnf'),
      [
        '[ca]',
        'default_ca = issuing',
        '[issuing]',
        `database = ${path.join(directory, 'index.txt')}`,
        `crlnumber = ${path.join(directory, 'crlnumber')}`,
        `certificate = ${path.join(directory, 'issuing.pem')}`,
        `private_key = ${path.join(directory, 'issuing.key')}`,
        'default_md = sha256',
        'default_crl_days = 1',
        '',
      ].join('\n'),
    );
    return ca;
  }

  get rootPem(): string {
    return this.#read('root.pem');
  }

  get issuingPem(): string {
    return this.#read('issuing.pem');
  }

  /**
   * A device certificate from the issuing CA: `CN`, subject `serialNumber`, SAN URI, Intune's
   * tenant extension and the certificate's serial as given, valid `days` (default 10; an MDM's
   * renewal is a new one).
   */
  device(
    file: string,
    subject: {
      readonly cn: string;
      readonly serialNumber?: string;
      readonly uri?: string;
      readonly email?: string;
      readonly intuneTenantDer?: string;
      /** The certificate's own serial number as `openssl x509 -set_serial` takes it (`0`, `-0x8A11`); random by default. */
      readonly certificateSerial?: string;
      /** Its extendedKeyUsage as openssl's config writes it; default `clientAuth`, null for none. */
      readonly extendedKeyUsage?: string | null;
      /** More extensions, as openssl's config writes them (`1.3.6.1.4.1.55555.1=critical,ASN1:NULL`). */
      readonly extensions?: readonly string[];
      /** The CA that issues it (one of `subordinateCa`); the issuing CA by default. */
      readonly issuedBy?: DeviceCertificateFiles;
    },
    days = 10,
  ): DeviceCertificateFiles {
    const extensions = [
      'basicConstraints=CA:FALSE',
      ...(subject.extendedKeyUsage === null ? [] : [`extendedKeyUsage=${subject.extendedKeyUsage ?? 'clientAuth'}`]),
      ...(subject.uri === undefined && subject.email === undefined
        ? []
        : [
            `subjectAltName=${[subject.uri === undefined ? [] : [`URI:${subject.uri}`], subject.email === undefined ? [] : [`email:${subject.email}`]].flat().join(',')}`,
          ]),
      ...(subject.intuneTenantDer === undefined ? [] : [`1.2.840.113556.5.14=DER:${subject.intuneTenantDer}`]),
      ...(subject.extensions ?? []),
    ];
    return this.#issue(
      file,
      `/CN=${subject.cn}${subject.serialNumber === undefined ? '' : `/serialNumber=${subject.serialNumber}`}`,
      extensions,
      days,
      subject.certificateSerial,
      subject.issuedBy,
    );
  }

  /**
   * A CA under the issuing CA (the chain's third level), named `cn` (the issuing CA's own name
   * makes it self-issued), with `extensions`; it issues device certificates given it as `issuedBy`.
   */
  subordinateCa(file: string, cn: string, extensions: readonly string[] = CA_EXTENSIONS): DeviceCertificateFiles {
    return this.#issue(file, `/CN=${cn}`, extensions);
  }

  /**
   * The issuing CA's name and key in another certificate from the root, with `extensions` (the CA
   * certificate issued again), in `{file}.pem`; its path. Device certificates are still presented
   * with `issuing.pem`.
   */
  reissueIssuingCa(file: string, extensions: readonly string[]): string {
    writeFileSync(path.join(this.directory, `${file}.ext`), `${extensions.join('\n')}\n`);
    this.#signIssuingCsr(`${file}.ext`, `${file}.pem`);
    return path.join(this.directory, `${file}.pem`);
  }

  /** The issuing CA's request signed by the root for 30 days, with the extensions of `extFile`, into `outFile`. */
  #signIssuingCsr(extFile: string, outFile: string): void {
    this.#openssl([
      'x509',
      '-req',
      '-in',
      'issuing.csr',
      '-CA',
      'root.pem',
      '-CAkey',
      'root.key',
      '-CAcreateserial',
      '-days',
      '30',
      '-extfile',
      extFile,
      '-out',
      outFile,
    ]);
  }

  /**
   * The revocation list of `ca` (one of `subordinateCa`, its files named `file`), revoking
   * `revoked`, made now, in `{file}.crl`; its path.
   */
  subordinateCrl(ca: DeviceCertificateFiles, file: string, revoked: readonly DeviceCertificateFiles[] = []): string {
    writeFileSync(path.join(this.directory, `${file}-index.txt`), '');
    writeFileSync(path.join(this.directory, `${file}-crlnumber`), '01\n');
    writeFileSync(
      path.join(this.directory, `${file}.cnf`),
      [
        '[ca]',
        `default_ca = ${file}`,
        `[${file}]`,
        `database = ${path.join(this.directory, `${file}-index.txt`)}`,
        `crlnumber = ${path.join(this.directory, `${file}-crlnumber`)}`,
        `certificate = ${ca.certificate}`,
        `private_key = ${ca.key}`,
        'default_md = sha256',
        'default_crl_days = 1',
        '',
      ].join('\n'),
    );
    for (const certificate of revoked)
      this.#openssl(['ca', '-config', `${file}.cnf`, '-revoke', certificate.certificate]);
    this.#openssl(['ca', '-config', `${file}.cnf`, '-gencrl', '-out', `${file}.crl`]);
    return path.join(this.directory, `${file}.crl`);
  }

  /** A TLS server certificate for 127.0.0.1 from the issuing CA (the portal's enrollment listener). */
  server(file: string): DeviceCertificateFiles {
    return this.#issue(file, '/CN=127.0.0.1', [
      'basicConstraints=CA:FALSE',
      'extendedKeyUsage=serverAuth',
      'subjectAltName=IP:127.0.0.1',
    ]);
  }

  /**
   * The portal's `enrollment` for mutual TLS with this CA: a listener on a free loopback port
   * with a server certificate from it, its root as the trust anchor, the device id from the SAN
   * URI `urn:mdm:serial:…`, and what a test adds to `clientCertificate`.
   */
  mutualTlsEnrollment(clientCertificate: Record<string, unknown>): Record<string, unknown> {
    const server = this.server('server');
    return {
      requestsPerMinute: 10_000,
      tls: { listen: '127.0.0.1:0', certificate: server.certificate, key: server.key },
      clientCertificate: {
        trustAnchors: [this.rootFile],
        deviceId: { from: 'san-uri', prefix: 'urn:mdm:serial:' },
        ...clientCertificate,
      },
    };
  }

  /** A new P-256 key and a certificate for it from the issuing CA, valid `days`. */
  #issue(
    file: string,
    subject: string,
    extensions: readonly string[],
    days = 10,
    serial?: string,
    issuer?: DeviceCertificateFiles,
  ): DeviceCertificateFiles {
    writeFileSync(path.join(this.directory, `${file}.ext`), `${extensions.join('\n')}\n`);
    this.#openssl([
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${file}.key`,
      '-subj',
      subject,
      '-out',
      `${file}.csr`,
    ]);
    this.#openssl([
      'x509',
      '-req',
      '-in',
      `${file}.csr`,
      '-CA',
      issuer?.certificate ?? 'issuing.pem',
      '-CAkey',
      issuer?.key ?? 'issuing.key',
      ...(serial === undefined ? ['-CAcreateserial'] : ['-set_serial', serial]),
      '-days',
      String(days),
      '-extfile',
      `${file}.ext`,
      '-out',
      `${file}.pem`,
    ]);
    return {
      certificate: path.join(this.directory, `${file}.pem`),
      key: path.join(this.directory, `${file}.key`),
      certificatePem: this.#read(`${file}.pem`),
    };
  }

  /** The issuing CA's certificate file (an intermediate under the root). */
  get issuingFile(): string {
    return path.join(this.directory, 'issuing.pem');
  }

  /** The root certificate's file (a trust anchor). */
  get rootFile(): string {
    return path.join(this.directory, 'root.pem');
  }

  /** Revokes a device certificate and writes the issuing CA's revocation list; its path. */
  revoke(certificate: string, times: CrlTimes = {}): string {
    this.#openssl(['ca', '-config', 'ca.cnf', '-revoke', certificate]);
    return this.writeCrl(times);
  }

  /** Revokes the issuing CA itself and writes the root's revocation list (`root.crl`); its path. */
  revokeIssuingCa(): string {
    this.writeRootCrl();
    this.#openssl(['ca', '-config', 'root.cnf', '-revoke', 'issuing.pem']);
    return this.writeRootCrl();
  }

  /** The root's revocation list as it stands (`root.crl`, PEM), made now; its path. */
  writeRootCrl(): string {
    if (!existsSync(path.join(this.directory, 'root.cnf'))) {
      writeFileSync(path.join(this.directory, 'root-index.txt'), '');
      writeFileSync(path.join(this.directory, 'root-crlnumber'), '01\n');
      writeFileSync(
        path.join(this.directory, 'root.cnf'),
        [
          '[ca]',
          'default_ca = root',
          '[root]',
          `database = ${path.join(this.directory, 'root-index.txt')}`,
          `crlnumber = ${path.join(this.directory, 'root-crlnumber')}`,
          `certificate = ${path.join(this.directory, 'root.pem')}`,
          `private_key = ${path.join(this.directory, 'root.key')}`,
          'default_md = sha256',
          'default_crl_days = 1',
          '',
        ].join('\n'),
      );
    }
    this.#openssl(['ca', '-config', 'root.cnf', '-gencrl', '-out', 'root.crl']);
    return path.join(this.directory, 'root.crl');
  }

  /**
   * The issuing CA's revocation list as it stands (PEM), made now unless `times` say otherwise
   * (a list not yet valid, or one past its nextUpdate), into `file`; its path.
   */
  writeCrl(times: CrlTimes = {}): string {
    const file = times.file ?? 'issuing.crl';
    this.#openssl([
      'ca',
      '-config',
      'ca.cnf',
      '-gencrl',
      ...(times.thisUpdate === undefined ? [] : ['-crl_lastupdate', opensslTime(times.thisUpdate)]),
      ...(times.nextUpdate === undefined ? [] : ['-crl_nextupdate', opensslTime(times.nextUpdate)]),
      '-out',
      file,
    ]);
    return path.join(this.directory, file);
  }

  remove(): void {
    rmSync(this.directory, { recursive: true, force: true });
  }

  #read(file: string): string {
    return readFileSync(path.join(this.directory, file), 'utf8');
  }

  #openssl(args: readonly string[]): void {
    execFileSync('openssl', args, { cwd: this.directory, stdio: ['ignore', 'pipe', 'pipe'] });
  }
}

/** A DER element: its tag, its length (short or long form) and `content`. */
function der(tag: number, content: Buffer): Buffer {
  const length = content.length;
  const encoded =
    length < 0x80
      ? Buffer.from([length])
      : length < 0x100
        ? Buffer.from([0x81, length])
        : Buffer.from([0x82, length >> 8, length & 0xff]);
  return Buffer.concat([Buffer.from([tag]), encoded, content]);
}

/**
 * A subjectAltName extension as openssl's config writes raw DER, for names its `URI:` and
 * `email:` cannot write (a NUL): rfc822Name is [1], uniformResourceIdentifier [6], IA5String.
 */
export function subjectAltNameDer(names: { readonly email?: string; readonly uri?: string }): string {
  const items = [
    ...(names.uri === undefined ? [] : [der(0x86, Buffer.from(names.uri, 'latin1'))]),
    ...(names.email === undefined ? [] : [der(0x81, Buffer.from(names.email, 'latin1'))]),
  ];
  return `subjectAltName=DER:${der(0x30, Buffer.concat(items)).toString('hex')}`;
}

/** An answer of the portal's mutual-TLS enrollment listener. */
export interface TlsAnswer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/** The portal's {baseUrl}enroll on its mutual-TLS listener. */
export function tlsEnrollUrl(portal: TestPortal): string {
  return `${portal.portal.enrollTlsUrl ?? ''}${portal.portal.ctx.config.basePath}/enroll`;
}

/** POST `url` (the TLS listener's {baseUrl}enroll) presenting this device certificate with `ca`'s issuing CA (or none). */
export function enrollOverTls(
  url: string,
  ca: MdmCa,
  device: DeviceCertificateFiles | null,
  form: Record<string, string>,
  issuing: MdmCa = ca,
): Promise<TlsAnswer> {
  const body = new URLSearchParams(form).toString();
  return new Promise((resolve, reject) => {
    const sent = request(
      url,
      {
        method: 'POST',
        ca: [ca.rootPem, ca.issuingPem],
        ...(device === null
          ? {}
          : { cert: `${device.certificatePem}${issuing.issuingPem}`, key: readFileSync(device.key) }),
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/x-wireguard-profile' },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
      },
    );
    sent.on('error', reject);
    sent.end(body);
  });
}

/**
 * enrollOverTls once the portal has read its revocation lists: the 503 a certificate gets while a
 * distribution point's first list is awaited is tried again, for up to 30 s.
 */
export async function enrollOnceListsRead(...request: Parameters<typeof enrollOverTls>): Promise<TlsAnswer> {
  const limit = timeLimit(30_000);
  for (;;) {
    const answer = await enrollOverTls(...request);
    if (answer.status !== 503 || !/has not been read yet/.test(answer.text) || limit.passed()) return answer;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Enrolls `device` with a fresh key, once the lists are read when `once` says so, and checks
 * the answer is the refusal of a revoked certificate (403).
 */
export async function assertEnrollmentRefusedAsRevoked(
  url: string,
  serverCa: MdmCa,
  device: DeviceCertificateFiles,
  once: 'lists-read' | 'now' = 'lists-read',
): Promise<void> {
  const form = { public_key: generateWireGuardKeyPair().publicKey };
  const answer =
    once === 'now'
      ? await enrollOverTls(url, serverCa, device, form)
      : await enrollOnceListsRead(url, serverCa, device, form);
  assert.equal(answer.status, 403, answer.text);
  assert.match(answer.text, /revoked/);
}

/** Serves the CA's revocation list file over http at `{url}`, as a CA's distribution point does; `failing` makes it answer 500. */
export class CrlServer {
  failing = false;
  /** Requests received so far. */
  requests = 0;
  /** While set, every request is answered with a redirect (302) to this URL. */
  redirectTo: string | null = null;
  /** Awaited before a request is answered, with its ordinal (0 for the first): a test holds a read with it. */
  gate: ((ordinal: number) => Promise<void>) | null = null;
  readonly #server: Server;
  readonly url: string;

  private constructor(server: Server, url: string) {
    this.#server = server;
    this.url = url;
  }

  static async start(file: () => string): Promise<CrlServer> {
    let self: CrlServer | undefined;
    const server = createServer(async (_request, response) => {
      if (self === undefined) {
        response.writeHead(503).end('starting');
        return;
      }
      const ordinal = self.requests++;
      await self.gate?.(ordinal);
      if (self.failing) {
        response.writeHead(500).end('down');
        return;
      }
      if (self.redirectTo !== null) {
        response.writeHead(302, { location: self.redirectTo }).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/pkix-crl' }).end(readFileSync(file()));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    self = new CrlServer(server, `http://127.0.0.1:${address.port}/issuing.crl`);
    return self;
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
