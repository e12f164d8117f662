//go:build !linux

package broker

import (
	"net"
	"os"
)

// checkPeer relies on the socket directory's permissions where peer
// credentials are not read: the reviewer is the user the directory
// belongs to.
func checkPeer(*net.UnixConn) (string, error) { return userName(os.Getuid()), nil }
