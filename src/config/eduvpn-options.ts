// The eduVPN 3.x config.php options this portal does not take under the same name, and where
// each went: the converter (`vpn-portal import eduvpn-config`) prints it for every such option
// it meets, and the start-up check names it when portal.json still carries one, so an
// administrator moving from eduVPN is told what to do instead of only "Unrecognized key".

/** Where an option sits in config.php: at the top level, or inside a section. */
export type EduVpnSection = 'top' | 'ProfileList' | 'WireGuard' | 'Log';

/** What became of an eduVPN option here. */
export type EduVpnOptionFate =
  /** The same meaning under another name (`how` says how its value is written there). */
  | { readonly kind: 'renamed'; readonly to: string; readonly how: string }
  /** No counterpart: `why` names what it served and what to do instead. */
  | { readonly kind: 'unused'; readonly why: string };

const USER_PORTAL_LOGIN = "the user portal's login (this portal has no user portal)";
const USER_PORTAL_PAGES = "the user portal's pages (this portal has no user portal)";
const ADMINS_HERE =
  "the user portal's admin pages; administrators here use admin keys (vpn-portal admin-key) or the console's sign-in (adminConsole)";

const TOP_LEVEL: Readonly<Record<string, EduVpnOptionFate>> = {
  Db: {
    kind: 'renamed',
    to: 'database',
    how: 'sqlite:PATH or postgres://USER:PASSWORD@HOST:PORT/DATABASE; not MariaDB/MySQL, which only vpn-portal import eduvpn reads',
  },
  vpnCaPath: {
    kind: 'unused',
    why: 'the OpenVPN CA is built in (generate-secrets makes it; the import brings the old one)',
  },
  maxActiveConfigurations: {
    kind: 'unused',
    why: "the user portal's download limit, which the Admin API does not apply (in eduVPN either)",
  },
  Api: { kind: 'unused', why: "the eduVPN apps' API (OAuth, /api/v3), which this portal does not serve" },
  browserSessionExpiry: {
    kind: 'unused',
    why: "the user portal's browser sessions; the admin console's are adminConsole.idleTimeout and adminConsole.sessionLifetime",
  },
  authModule: { kind: 'unused', why: USER_PORTAL_LOGIN },
  sessionModule: { kind: 'unused', why: "the user portal's browser sessions (this portal has no user portal)" },
  accessPermissionList: { kind: 'unused', why: USER_PORTAL_LOGIN },
  adminPermissionList: { kind: 'unused', why: ADMINS_HERE },
  adminUserIdList: { kind: 'unused', why: ADMINS_HERE },
  enabledLanguages: { kind: 'unused', why: USER_PORTAL_PAGES },
  defaultLanguage: { kind: 'unused', why: USER_PORTAL_PAGES },
  styleName: { kind: 'unused', why: USER_PORTAL_PAGES },
  showPermissions: { kind: 'unused', why: USER_PORTAL_PAGES },
};

const SECTIONS: Readonly<Record<EduVpnSection, Readonly<Record<string, EduVpnOptionFate>>>> = {
  top: TOP_LEVEL,
  // Every ProfileList option of eduVPN 3.x is taken here under its own name.
  ProfileList: {},
  WireGuard: {
    allowExpiryExtension: {
      kind: 'unused',
      why: "the user portal's own renewal; administrators renew with the Admin API's extend",
    },
    firewallMark: { kind: 'unused', why: 'the node agent sets no firewall mark on the WireGuard interface' },
  },
  Log: { authData: { kind: 'unused', why: 'no user signs in here, so there is no authentication data to log' } },
};

/** The fate of `name` in `section`; a top-level `…AuthModule` or `…SessionModule` section is the user portal's. */
export function eduVpnOptionFate(section: EduVpnSection, name: string): EduVpnOptionFate | null {
  const known = SECTIONS[section][name];
  if (known !== undefined) return known;
  if (section === 'top' && /^[A-Z][A-Za-z]*AuthModule$/.test(name)) return { kind: 'unused', why: USER_PORTAL_LOGIN };
  if (section === 'top' && /^[A-Z][A-Za-z]*SessionModule$/.test(name))
    return { kind: 'unused', why: "the user portal's browser sessions (this portal has no user portal)" };
  return null;
}

/** `"Db": an eduVPN option; here it is "database" (…)`, or `"authModule": an eduVPN option not used here: …`. */
export function describeEduVpnOption(name: string, fate: EduVpnOptionFate): string {
  return fate.kind === 'renamed'
    ? `"${name}": an eduVPN option; here it is "${fate.to}" (${fate.how})`
    : `"${name}": an eduVPN option not used here: ${fate.why}`;
}
