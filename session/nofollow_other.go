//go:build !unix

package session

const (
	noFollow = 0
	openDir  = 0
)
