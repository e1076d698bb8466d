package access

// This file is compiled only into the package's tests: package access_test
// walks api's routes, which it cannot see from inside access (api imports
// access), and checks each against neededScope.

// NeededScope is neededScope.
var NeededScope = neededScope

// EveryUserScope is what a route nobody classified needs.
const EveryUserScope = canJobsRead | canJobsWrite | canRunsRead
