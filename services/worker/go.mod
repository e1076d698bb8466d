module github.com/tockhq/tock/services/worker

go 1.26.8
