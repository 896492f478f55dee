// A local stand-in for the MDMs' APIs, since Microsoft Graph and Jamf Pro cannot be reached from
// the tests: it serves their documented request and answer shapes — Microsoft's OAuth 2.0 client
// credentials token endpoint and Graph's `deviceManagement/managedDevices` with `$select`,
// `@odata.nextLink` paging and the compliance properties (`complianceState`,
// `complianceGracePeriodExpirationDateTime`, `lastSyncDateTime`); Jamf Pro's `/api/oauth/token`,
// `/api/v1/computers-inventory`, `/api/v2/mobile-devices` and `/api/v2/mobile-devices/detail`
// with `page`/`page-size` and `totalCount`, and the RSQL `filter` by serial (`hardware.serialNumber`
// of the computers, `serialNumber` of the mobile devices' details; any other filter is a 400, as
// Jamf Pro answers one it cannot apply) — and a plain JSON list (serials, or objects with `compliant`). Pages are small
// (2 devices) so that every client must page. A test edits `devices`, or sets `down`, or makes
// the paging misbehave (a change between Jamf pages, a Graph next link back to a page read).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { PortalConfigFile } from '../../src/config/schema.js';

type InventoryOption = NonNullable<PortalConfigFile['mdmInventory']>;

export interface StandInDevice {
  /** Intune's managed device id; Jamf's UDID. */
  readonly id: string;
  readonly serial: string;
  /** For Jamf: a computer or a mobile device. */
  readonly kind?: 'computer' | 'mobile';
  /** Intune's `complianceState` (default `compliant`). */
  readonly complianceState?: string;
  /** Intune's `complianceGracePeriodExpirationDateTime` (default Graph's "none", `0001-01-01T00:00:00Z`). */
  readonly gracePeriodEnds?: string;
  /** Intune's `lastSyncDateTime` (default: the stand-in's start). */
  readonly lastSync?: string;
  /** The JSON list's `compliant`: absent, the entry is the serial alone; present, an object. */
  readonly compliant?: boolean;
  /** For Jamf: its Jamf Pro id (numbered per kind, as webhooks name it); default: `id`, unique as Jamf's ids are within a kind. */
  readonly jamfId?: string;
}

/** The managedDevice properties the stand-in knows (Graph answers 400 to an unknown one in `$select`). */
const MANAGED_DEVICE_PROPERTIES = [
  'id',
  'serialNumber',
  'complianceState',
  'complianceGracePeriodExpirationDateTime',
  'lastSyncDateTime',
] as const;
/** Graph's value for a DateTimeOffset it does not have. */
const GRAPH_NO_DATE = '0001-01-01T00:00:00Z';

export const STAND_IN_TENANT = '11111111-2222-3333-4444-555555555555';
export const STAND_IN_CLIENT_ID = 'portal-client';
export const STAND_IN_CLIENT_SECRET = 'stand-in-secret-value';
const ACCESS_TOKEN = 'stand-in-access-token';
const PAGE_SIZE = 2;

export class MdmStandIn {
  devices: StandInDevice[] = [];
  /** Every request answers 503. */
  down = false;
  /** When set, the JSON list answers this instead of the devices. */
  jsonAnswer: unknown = undefined;
  /** Runs after each Jamf page is answered: a test changes `devices` there, as Jamf Pro changes between two pages. */
  afterJamfPage: ((kind: 'computer' | 'mobile', page: number) => void) | undefined = undefined;
  /** Jamf answers page 0 whatever page is asked (a server or proxy that drops `page`). */
  jamfIgnoresPage = false;
  /** Added to Jamf's `totalCount`: a count of records the list does not give. */
  jamfTotalCountOffset = 0;
  /** Graph's page at `$skiptoken` `from` links to `$skiptoken` `to` (a page already read) instead of the next one. */
  graphLinksBack: { readonly from: number; readonly to: number } | undefined = undefined;
  readonly #startedAt = new Date().toISOString();
  /** What each request asked: method, path with query, and the form or headers that matter. */
  readonly requests: {
    method: string;
    url: string;
    form?: Record<string, string>;
    consistencyLevel?: string;
    authorization?: string;
  }[] = [];
  readonly #server: Server;
  readonly url: string;

  private constructor(server: Server, url: string) {
    this.#server = server;
    this.url = url;
  }

  static async start(): Promise<MdmStandIn> {
    let self: MdmStandIn | undefined;
    const server = createServer((request, response) => {
      void (async () => {
        const body = await readBody(request);
        const answer = self === undefined ? { status: 500, json: {} } : self.#answer(request, body);
        response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.json));
      })();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    self = new MdmStandIn(server, `http://127.0.0.1:${address.port}`);
    return self;
  }

  /** `mdmInventory` for Intune against this stand-in. */
  intuneConfig(secretFile: string): InventoryOption {
    return {
      provider: 'intune',
      tenantId: STAND_IN_TENANT,
      clientId: STAND_IN_CLIENT_ID,
      clientSecretFile: secretFile,
      tokenUrl: `${this.url}/${STAND_IN_TENANT}/oauth2/v2.0/token`,
      graphUrl: `${this.url}/v1.0`,
    };
  }

  jamfConfig(secretFile: string): InventoryOption {
    return { provider: 'jamf', url: `${this.url}/jamf`, clientId: STAND_IN_CLIENT_ID, clientSecretFile: secretFile };
  }

  jsonConfig(): InventoryOption {
    return {
      provider: 'json',
      url: `${this.url}/inventory.json`,
      headers: { Authorization: `Bearer ${ACCESS_TOKEN}` },
    };
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #answer(request: IncomingMessage, body: string): { status: number; json: unknown } {
    const url = new URL(request.url ?? '/', this.url);
    const form = request.method === 'POST' ? Object.fromEntries(new URLSearchParams(body)) : undefined;
    const authorization = request.headers.authorization;
    const consistencyLevel = request.headers['consistencylevel'];
    this.requests.push({
      method: request.method ?? '',
      url: `${url.pathname}${url.search}`,
      ...(form === undefined ? {} : { form }),
      ...(typeof consistencyLevel === 'string' ? { consistencyLevel } : {}),
      ...(authorization === undefined ? {} : { authorization }),
    });
    if (this.down) return { status: 503, json: { error: 'unavailable' } };
    const tokenPath =
      url.pathname === `/${STAND_IN_TENANT}/oauth2/v2.0/token` || url.pathname === '/jamf/api/oauth/token';
    if (tokenPath) {
      if (request.method !== 'POST' || form?.['grant_type'] !== 'client_credentials')
        return { status: 400, json: { error: 'unsupported_grant_type' } };
      if (form['client_id'] !== STAND_IN_CLIENT_ID || form['client_secret'] !== STAND_IN_CLIENT_SECRET)
        return { status: 401, json: { error: 'invalid_client' } };
      if (url.pathname.startsWith('/jamf/'))
        return {
          status: 200,
          json: { access_token: ACCESS_TOKEN, scope: 'api-role:1', token_type: 'Bearer', expires_in: 299 },
        };
      if (form['scope']?.endsWith('/.default') !== true) return { status: 400, json: { error: 'invalid_scope' } };
      return {
        status: 200,
        json: { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: ACCESS_TOKEN },
      };
    }
    if (authorization !== `Bearer ${ACCESS_TOKEN}`)
      return { status: 401, json: { error: { code: 'InvalidAuthenticationToken' } } };
    if (url.pathname === '/v1.0/deviceManagement/managedDevices') return this.#graphPage(url);
    if (url.pathname === '/jamf/api/v1/computers-inventory') {
      return this.#jamfPage(url, 'computer', 'hardware.serialNumber', (device) => ({
        id: device.jamfId ?? device.id,
        udid: device.id,
        general: { name: device.serial },
        hardware: { serialNumber: device.serial },
      }));
    }
    if (url.pathname === '/jamf/api/v2/mobile-devices/detail') {
      const sections = url.searchParams.getAll('section');
      return this.#jamfPage(url, 'mobile', 'serialNumber', (device) => ({
        mobileDeviceId: device.jamfId ?? device.id,
        deviceType: 'iOS',
        general: sections.includes('GENERAL') ? { displayName: device.serial, udid: device.id } : null,
        hardware: sections.includes('HARDWARE') ? { serialNumber: device.serial } : null,
      }));
    }
    if (url.pathname === '/jamf/api/v2/mobile-devices') {
      return this.#jamfPage(url, 'mobile', null, (device) => ({
        id: device.jamfId ?? device.id,
        name: device.serial,
        serialNumber: device.serial,
        udid: device.id,
        wifiMacAddress: null,
      }));
    }
    if (url.pathname === '/inventory.json') {
      if (this.jsonAnswer !== undefined) return { status: 200, json: this.jsonAnswer };
      return {
        status: 200,
        json: this.devices.map((device) =>
          device.compliant === undefined
            ? device.serial
            : { serial: device.serial, id: device.id, compliant: device.compliant },
        ),
      };
    }
    return { status: 404, json: { error: 'not found' } };
  }

  /** Graph's paging: `$skiptoken` in an absolute `@odata.nextLink`, absent on the last page; only the `$select`ed properties. */
  #graphPage(url: URL): { status: number; json: unknown } {
    const select = url.searchParams.get('$select') ?? '';
    const properties = select.split(',');
    if (!properties.every((name) => (MANAGED_DEVICE_PROPERTIES as readonly string[]).includes(name)))
      return {
        status: 400,
        json: { error: { code: 'BadRequest', message: `Could not find a property in ${select}` } },
      };
    const skip = Number(url.searchParams.get('$skiptoken') ?? '0');
    const page = this.devices.slice(skip, skip + PAGE_SIZE);
    const next =
      this.graphLinksBack?.from === skip
        ? `${this.url}/v1.0/deviceManagement/managedDevices?$select=${select}&$skiptoken=${this.graphLinksBack.to}`
        : skip + PAGE_SIZE < this.devices.length
          ? `${this.url}/v1.0/deviceManagement/managedDevices?$select=${select}&$skiptoken=${skip + PAGE_SIZE}`
          : undefined;
    return {
      status: 200,
      json: {
        '@odata.context': `${this.url}/v1.0/$metadata#deviceManagement/managedDevices(${select})`,
        value: page.map((device) => {
          const record: Record<string, string> = {
            id: device.id,
            serialNumber: device.serial,
            complianceState: device.complianceState ?? 'compliant',
            complianceGracePeriodExpirationDateTime: device.gracePeriodEnds ?? GRAPH_NO_DATE,
            lastSyncDateTime: device.lastSync ?? this.#startedAt,
          };
          return Object.fromEntries(properties.map((name) => [name, record[name]]));
        }),
        ...(next === undefined ? {} : { '@odata.nextLink': next }),
      },
    };
  }

  /**
   * Jamf's paging: `page` from 0 and `page-size` (the stand-in gives at most PAGE_SIZE), with
   * `totalCount`; `filter` an RSQL equality of the serial field the list has (`serialField`, null
   * when the list takes no filter), its value quoted, compared letter case aside.
   */
  #jamfPage(
    url: URL,
    kind: 'computer' | 'mobile',
    serialField: string | null,
    record: (device: StandInDevice) => unknown,
  ): { status: number; json: unknown } {
    const asked = Number(url.searchParams.get('page') ?? '0');
    const page = this.jamfIgnoresPage ? 0 : asked;
    const size = Math.min(PAGE_SIZE, Number(url.searchParams.get('page-size') ?? '100'));
    const filter = url.searchParams.get('filter');
    const serial = filter === null || serialField === null ? undefined : rsqlEquality(filter, serialField);
    if (filter !== null && serial === undefined)
      return {
        status: 400,
        json: { httpStatus: 400, errors: [{ code: 'INVALID_RSQL_FILTER_FIELD', field: 'filter' }] },
      };
    const all = this.devices.filter(
      (device) =>
        (device.kind ?? 'computer') === kind &&
        (serial === undefined || device.serial.toUpperCase() === serial.toUpperCase()),
    );
    const json = {
      totalCount: all.length + this.jamfTotalCountOffset,
      results: all.slice(page * size, (page + 1) * size).map(record),
    };
    this.afterJamfPage?.(kind, asked);
    return { status: 200, json };
  }
}

/** The value of an RSQL `field=="value"` (backslash escapes undone), else undefined. */
function rsqlEquality(filter: string, field: string): string | undefined {
  const match = /^([A-Za-z.]+)=="((?:[^"\\]|\\.)*)"$/.exec(filter);
  if (match === null || match[1] !== field) return undefined;
  return (match[2] ?? '').replace(/\\(.)/g, '$1');
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => resolve(text));
  });
}
