package main

import (
	"net/netip"
	"strings"

	"github.com/airlock-dev/airlock/sandbox"
)

// parseAllowHosts reads --run-allow-host's pairs: an IP address and a
// port each, exactly what a run with the network may reach of this
// machine or its network. A name is refused: it could resolve to another
// address by the time a run connects.
func parseAllowHosts(pairs []string) ([]netip.AddrPort, error) {
	var aps []netip.AddrPort
	for _, p := range pairs {
		s := strings.TrimSpace(p)
		if h, port, ok := strings.Cut(s, ":"); ok && h == "localhost" {
			s = "127.0.0.1:" + port
		}
		ap, err := netip.ParseAddrPort(s)
		switch {
		case err != nil:
			return nil, usageError("--run-allow-host %q: give an IP address and a port, as 127.0.0.1:5000, 192.168.1.10:443 or [::1]:5000 (not a name: the pair is exact)", p)
		case ap.Port() == 0:
			return nil, usageError("--run-allow-host %q: give the port the run may reach, not 0", p)
		case ap.Addr().IsUnspecified() || ap.Addr().IsMulticast():
			return nil, usageError("--run-allow-host %q: give one host's address, not %s", p, ap.Addr())
		case sandbox.RunsOwnNetwork(ap.Addr()):
			return nil, usageError("--run-allow-host %q: %s is in the run's own network (10.0.2.0/24, its user-mode stack's); give the host's address", p, ap.Addr())
		}
		aps = append(aps, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	}
	return aps, nil
}

func joinPairs(aps []netip.AddrPort) string {
	s := make([]string, len(aps))
	for i, ap := range aps {
		s[i] = ap.String()
	}
	return strings.Join(s, ", ")
}
