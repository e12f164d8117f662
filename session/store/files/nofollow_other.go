//go:build !unix

package files

const (
	noFollow = 0
	openDir  = 0
)
