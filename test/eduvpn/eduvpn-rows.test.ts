// eduVPN's rows checked at the edge (src/eduvpn/eduvpn-rows.ts): a time that is not a real ATOM
// timestamp stops the import naming its table, row and field, as the documentation promises
// (docs/moving-from-eduvpn.md, "Rows"); it is never read as some other time.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseEduVpnRow } from '../../src/eduvpn/eduvpn-rows.js';
import { EduVpnReadError } from '../../src/eduvpn/read-error.js';

const KEY = 'tOOu6YZc95ERMoY+plz71wVjBH1r4Akg1HaeRjw/IW4=';

function peerRow(expiresAt: string) {
  return {
    public_key: KEY,
    user_id: 'alice',
    profile_id: 'employees',
    node_number: 0,
    display_name: 'Admin API',
    ip_four: '10.44.0.2',
    ip_six: 'fd44::2',
    created_at: '2026-10-01T08:00:00+00:00',
    expires_at: expiresAt,
    auth_key: null,
  };
}

test('an expiry on a day the calendar does not have (30 February, hour 24), or past the year 9999 in UTC, is refused, not moved to another day', () => {
  for (const expiresAt of ['2027-02-30T10:00:00+00:00', '2027-01-01T24:00:00+00:00', '9999-12-31T23:00:00-05:00']) {
    let read: string;
    try {
      read = parseEduVpnRow('wg_peers', `public_key "${KEY}"`, peerRow(expiresAt)).expiresAt;
    } catch (error) {
      assert.ok(error instanceof EduVpnReadError);
      assert.match(error.message, /field expires_at/);
      continue;
    }
    assert.fail(`expires_at ${expiresAt} was read as ${read}`);
  }
});
