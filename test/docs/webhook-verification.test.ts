// docs/webhooks.md shows a receiver how to verify a delivery's signature; receivers copy it, and
// their endpoint is open to anyone who finds it. The function it shows is run here, as written:
// it accepts what the portal signs, and answers false, never throws, for a forged header.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { webhookSignature } from '../../src/keys/webhook-signature.js';

type Verify = (header: string, body: string | Buffer, secret: string, toleranceSeconds?: number) => boolean;

const page = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');

/** The page's JavaScript block, loaded as the module a receiver would make of it. */
async function documentedVerify(t: { after: (fn: () => void) => void }): Promise<Verify> {
  const section = page.slice(page.indexOf('## Verifying a delivery'));
  const code = /^```js\n([\s\S]*?)^```$/m.exec(section)?.[1];
  assert.ok(code !== undefined, 'docs/webhooks.md shows the verification in a js block');
  const folder = mkdtempSync(path.join(tmpdir(), 'webhook-verify-'));
  t.after(() => rmSync(folder, { recursive: true, force: true }));
  const file = path.join(folder, 'verify.mjs');
  writeFileSync(file, `${code}\nexport { verify };\n`);
  const loaded = (await import(pathToFileURL(file).href)) as { verify: Verify };
  return loaded.verify;
}

test('the verification docs/webhooks.md shows accepts the portal’s signature and refuses a forged one without throwing', async (t) => {
  const verify = await documentedVerify(t);
  const secret = 'whsec_receiver-test-secret';
  const body = '{"id":"0190","type":"user.created","at":"2026-03-02T09:00:00+00:00","data":{"user_id":"alice"}}';
  const now = Math.floor(Date.now() / 1000);
  const signed = webhookSignature([secret], now, body);
  assert.equal(verify(signed, body, secret), true, 'a delivery the portal signed');
  assert.equal(verify(signed, Buffer.from(body), secret), true, 'its body read as bytes');
  assert.equal(verify(webhookSignature(['whsec_old', secret], now, body), body, secret), true, 'during an overlap');
  assert.equal(verify(signed, body, 'whsec_another'), false, 'another secret');
  assert.equal(verify(signed, `${body} `, secret), false, 'another body');
  assert.equal(
    verify(webhookSignature([secret], now - 600, body), body, secret),
    false,
    'a replay from ten minutes ago',
  );

  // Whoever reaches the receiver may send any header: each is refused, none makes it throw.
  const genuine = signed.split('v1=')[1] ?? '';
  for (const forged of [
    `t=${now},v1=${'zz'.repeat(32)}`,
    `t=${now},v1=${genuine.slice(0, 62)}zz`,
    `t=${now},v1=${'é'.repeat(64)}`,
    `t=${now},v1=${genuine.slice(0, 63)} `,
    `t=${now},v1`,
    `t=${now}`,
    'v1=',
    '',
  ]) {
    assert.equal(verify(forged, body, secret), false, `refused: ${JSON.stringify(forged)}`);
  }
});
