module github.com/tockhq/tock/services/worker

go 1.26.8

require (
	github.com/google/uuid v1.6.0
	github.com/tockhq/tock/pkg v0.0.0
)

replace github.com/tockhq/tock/pkg => ../../pkg
