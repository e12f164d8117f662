package transfer

import "errors"

// ErrTooLarge: an object is larger than the sandbox may hold. targets
// names it ErrObjectTooLarge; the one value is shared so that errors.Is
// finds it whichever package wrapped it.
var ErrTooLarge = errors.New("object too large for the sandbox")

// OrRoot names a tree's path in a message: "" is the root.
func OrRoot(p string) string {
	if p == "" {
		return "the root"
	}
	return p
}
