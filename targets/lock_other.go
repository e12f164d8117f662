//go:build !unix

package targets

import "os"

func flock(*os.File) error   { return nil }
func unflock(*os.File) error { return nil }
