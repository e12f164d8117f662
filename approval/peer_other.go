//go:build !linux

package approval

import "net"

// checkPeer relies on the socket directory's permissions where peer
// credentials are not read.
func checkPeer(*net.UnixConn) error { return nil }
