module github.com/tockhq/tock/services/scheduler

go 1.26.8
