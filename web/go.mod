module github.com/tockhq/tock/web

go 1.26.8
