module github.com/tockhq/tock/e2e

go 1.26.8
