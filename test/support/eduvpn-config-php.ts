// config.php files shaped like an eduVPN 3.x server's (written for these tests from the option
// list of the facts file, not copied): the converter's tests and the command's read them.

/** A portal config.php: two profiles on two nodes, per-node lists, PostgreSQL through PDO, user-portal options. */
export const PORTAL_CONFIG_PHP = `<?php

declare(strict_types=1);

// The portal of vpn.example.org: two nodes.
return [
    'sessionExpiry' => 'P90D',
    'supportedSessionExpiry' => ['P1D', 'P7D'],
    'caExpiry' => 'P10Y',
    'vpnCaPath' => '/usr/bin/vpn-ca',
    'maxActiveConfigurations' => 3,
    'styleName' => 'eduVPN',
    'enabledLanguages' => ['en-US', 'nl-NL'],
    'authModule' => 'DbAuthModule',
    'sessionModule' => 'FileSessionModule',
    'adminUserIdList' => ['admin'],
    'accessPermissionList' => null,
    'connectScriptPath' => '/usr/local/bin/on-connect',
    'Db' => [
        'dbDsn' => 'pgsql:host=db.example.org;port=5433;dbname=vpn',
        'dbUser' => 'vpn',
        'dbPass' => 's3cret/p@ss',
    ],
    'Api' => [
        'tokenExpiry' => 'PT1H',
        'enableGuestAccess' => false,
    ],
    'WireGuard' => [
        'listenPort' => 51820,
        'setMtu' => 1392,
        'allowExpiryExtension' => true,
    ],
    'Log' => [
        'syslogConnectionEvents' => true,
        'originatingIp' => false,
        'authData' => false,
    ],
    'ProfileList' => [
        [
            'profileId' => 'employees',
            'displayName' => 'Employees',
            'hostName' => ['vpn-a.example.org', 'vpn-b.example.org'],
            'nodeUrl' => ['http://10.0.0.11:41194', 'http://10.0.0.12:41194'],
            'onNode' => [0, 1],
            'wRangeFour' => ['10.43.0.0/24', '10.43.1.0/24'],
            'wRangeSix' => ['fd43::/64', 'fd43:1::/64'],
            'oRangeFour' => ['10.42.0.0/24', '10.42.1.0/24'],
            'oRangeSix' => ['fd42::/64', 'fd42:1::/64'],
            'dnsServerList' => ['9.9.9.9', '2620:fe::fe'],
            'aclPermissionList' => ['employees'],
            'oUdpPortList' => [1194],
            'oTcpPortList' => [1194],
        ],
        [
            'profileId' => 'guests',
            'displayName' => 'Guests',
            'hostName' => 'vpn-b.example.org',
            'nodeUrl' => 'http://10.0.0.12:41194',
            'onNode' => 1,
            'defaultGateway' => false,
            'routeList' => ['192.168.0.0/16'],
            'wRangeFour' => '10.44.0.0/24',
            'wRangeSix' => 'fd44::/64',
            'preferredProto' => 'wireguard',
        ],
    ],
    // 'RadiusAuthModule' => ['permissionAttribute' => RADIUS_REPLY_MESSAGE],
];
`;

/** A node config.php (vpn-server-node) for node 1. */
export const NODE_CONFIG_PHP = `<?php

declare(strict_types=1);

return [
    'apiUrl' => 'https://portal.example.org/vpn-user-portal/node-api.php',
    'nodeNumber' => 1,
    'profileIdList' => ['employees', 'guests'],
    'preferAes' => true,
    'vpnUser' => 'nobody',
    'vpnGroup' => 'nogroup',
];
`;
