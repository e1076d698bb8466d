module github.com/tockhq/tock/sdk/go

go 1.24
