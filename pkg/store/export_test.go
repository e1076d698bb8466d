package store

// ClaimDueSQL lets the external tests EXPLAIN the loader's exact claim query.
// They live in package store_test because testenv imports store: an internal
// test importing testenv would be an import cycle. Being a _test.go file, this
// adds nothing to the package's API.
const ClaimDueSQL = claimDueSQL

// ListJobsSQL and OwnLabelledJobsSQL let the benchmark EXPLAIN the listing's
// exact queries.
var (
	ListJobsSQL        = listJobsSQL
	OwnLabelledJobsSQL = ownLabelledJobsSQL
)
