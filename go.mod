module github.com/airlock-dev/airlock

go 1.26.0

require (
	github.com/benbjohnson/immutable v0.4.3
	github.com/go-git/go-billy/v5 v5.9.2
	golang.org/x/text v0.43.0
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c
)

require (
	github.com/kr/pretty v0.3.1 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/rogpeppe/go-internal v1.14.1 // indirect
	golang.org/x/exp v0.0.0-20260410095643-746e56fc9e2f // indirect
)
