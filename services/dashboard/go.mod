module github.com/tockhq/tock/services/dashboard

go 1.26.8
