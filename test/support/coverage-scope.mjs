// Loaded into every test process when `npm test` measures coverage (test/run.sh): the test
// process itself is measured, the programs it starts (a portal or agent process, the CLI) are
// not. Writing a whole process's coverage at its exit takes long enough to fail the tests that
// time how fast a process stops, and what such a process runs is run in-process elsewhere.
if (process.env['NODE_TEST_CONTEXT'] !== undefined) delete process.env['NODE_V8_COVERAGE'];
