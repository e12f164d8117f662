package broker

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// checkPeer refuses a connection from another user, and names the one it
// came from: the reviewer's identity in the ledger is what the kernel says
// of the connecting process, never a name it sends. The socket's directory
// already keeps other users out; this holds even if its permissions were
// changed.
func checkPeer(c *net.UnixConn) (string, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var cred *syscall.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return "", err
	}
	if serr != nil {
		return "", serr
	}
	if int(cred.Uid) != os.Getuid() {
		return "", fmt.Errorf("connection from uid %d refused", cred.Uid)
	}
	return fmt.Sprintf("%s (pid %d)", userName(int(cred.Uid)), cred.Pid), nil
}
