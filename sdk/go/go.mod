module github.com/tockhq/tock/sdk/go

go 1.26.8
