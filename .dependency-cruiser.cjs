// The layer order of docs/architecture.md, enforced: a module may import only from its own
// layer or a lower one, the node agent and the Admin API client only from the few layers they
// need, the HTTP surfaces apart from each other, and no import cycles; tools/ may read src/,
// never the other way. `npm run depcheck` runs this in .ci/run.

/** Bottom to top. */
const layers = [
  ['shared'],
  ['net'],
  ['wireguard', 'keys', 'apple', 'openvpn', 'config'],
  ['protocol'],
  ['storage', 'node-client', 'mdm-client', 'eduvpn'],
  ['core'],
  ['listeners', 'http', 'metrics'],
];
/** Folders apart from the stack, with what each may use. */
const apart = {
  agent: ['shared', 'net', 'wireguard', 'protocol'],
  'admin-client': ['shared', 'protocol'],
};
const folder = (name) => `^src/${name}/`;

const forbidden = [
  {
    name: 'no-cycle',
    comment: 'Two modules that import each other (directly or around a loop) cannot be read, tested or moved apart.',
    severity: 'error',
    from: { path: '^src/' },
    to: { circular: true },
  },
];
layers.forEach((names, index) => {
  const higher = [...layers.slice(index + 1).flat(), ...Object.keys(apart), 'cli'];
  forbidden.push({
    name: `layer-${names.join('-')}`,
    comment: `${names.join(', ')} may not import a higher layer, the agent, the admin client or the CLI (docs/architecture.md)`,
    severity: 'error',
    from: { path: names.map(folder) },
    to: { path: [...higher.map(folder), '^src/portal\\.ts$'] },
  });
});
for (const [name, allowed] of Object.entries(apart)) {
  forbidden.push({
    name: `${name}-apart`,
    comment: `${name} may use only ${allowed.join(', ')} (docs/architecture.md)`,
    severity: 'error',
    from: { path: folder(name) },
    to: { path: '^src/', pathNot: [folder(name), ...allowed.map(folder)] },
  });
}
forbidden.push({
  name: 'portal-below-cli',
  comment: 'the composition root may not import the CLI or the agent',
  severity: 'error',
  from: { path: '^src/portal\\.ts$' },
  to: { path: [folder('cli'), folder('agent'), folder('admin-client')] },
});

forbidden.push(
  {
    name: 'core-feature-through-index',
    comment:
      'a feature folder of src/core is entered only through its index.ts: no deep import from a sibling folder (docs/architecture.md)',
    severity: 'error',
    from: { path: '^src/core/([^/]+)/' },
    to: { path: '^src/core/[^/]+/', pathNot: ['^src/core/$1/', '^src/core/[^/]+/index\\.ts$'] },
  },
  {
    name: 'core-entered-through-index',
    comment:
      'outside src/core, a feature is imported only through its index.ts; only the root context.ts, events.ts, errors.ts and admin-call.ts reach a leaf for the type they name',
    severity: 'error',
    from: { path: '^src/', pathNot: '^src/core/' },
    to: { path: '^src/core/[^/]+/', pathNot: '^src/core/[^/]+/index\\.ts$' },
  },
);

/** The HTTP surfaces of src/http, one folder each; what they share is src/http/plumbing/. */
const surfaces = ['admin-api', 'node-api', 'console', 'enrollment', 'scim'];
/** The few files one surface may take from another, each with why. */
const surfaceExceptions = {
  // The console runs the Admin API's own calls in process (console/calls.ts binds a route
  // definition to the signed-in user), so it names the definitions and their routes.
  console: ['^src/http/admin-api/admin-route\\.ts$', '^src/http/admin-api/routes/'],
  // An enrolled device gets the very answer /create gives (configurationAnswer).
  enrollment: ['^src/http/admin-api/routes/issuing/create\\.ts$'],
};
for (const surface of surfaces) {
  forbidden.push({
    name: `http-surface-${surface}-apart`,
    comment: `the ${surface} surface may use src/http/plumbing/, not another surface's folder (docs/architecture.md)`,
    severity: 'error',
    from: { path: `^src/http/${surface}/` },
    to: {
      path: surfaces.filter((other) => other !== surface).map((other) => `^src/http/${other}/`),
      pathNot: surfaceExceptions[surface] ?? [],
    },
  });
}
forbidden.push({
  name: 'http-plumbing-below-surfaces',
  comment: 'src/http/plumbing/ serves every surface, so it imports none of them, nor the server that composes them',
  severity: 'error',
  from: { path: '^src/http/plumbing/' },
  to: { path: [...surfaces.map((surface) => `^src/http/${surface}/`), '^src/http/server\\.ts$'] },
});

forbidden.push({
  name: 'tools-outside',
  comment: 'tools/ (the docs generators) reads the program; the program never depends on its tools',
  severity: 'error',
  from: { path: '^src/' },
  to: { path: '^tools/' },
});

module.exports = {
  forbidden,
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
