package sandbox

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A run with the network has a network namespace of its own, as every run
// does, with a tap device that slirp4netns (started by the server, see
// netstack_linux.go) connects to the internet through the host's sockets:
// the run's packets become the server's connect(2) calls. slirp4netns
// filters no destination itself, so the helper, still holding
// CAP_NET_ADMIN over the namespace, shuts by route (type prohibit: connect
// answers EACCES) everything that is not the internet: the host's own
// addresses (slirp4netns would reach them as local ones), its loopback
// through slirp4netns's gateway, link-local (the cloud metadata address),
// the private and shared ranges. The command then runs with no capability
// (dropCapabilities) and may not make a user namespace (seccomp), so it
// cannot change those routes. Names resolve through the server's DNS
// relay, and the operator's --run-allow-host pairs through its forwarders:
// listeners the helper opens here, inside the namespace, and hands the
// server (netFD), which answers them from the host, to that pair only.

// netFD is the helper's end of the socket the run's listeners go out on.
const netFD = 7

// The addresses of slirp4netns's network as the run sees it (its
// defaults): the run's own, the gateway (the host's loopback, which
// --disable-host-loopback refuses anyway), and the DNS address, where the
// server's relay listens instead of slirp4netns's (--disable-dns). Its own
// (libslirp 4.7's) does answer UDP on port 53 from a loopback nameserver
// such as 127.0.0.53 (checked), but the relay keeps what reaches the host
// airlock's to bound and to test: DNS over UDP and TCP, to port 53 of the
// host's nameservers only.
var (
	tapDevice = "tap0"
	dnsAddr   = netip.MustParseAddr("10.0.2.3")
)

// shutRanges are what a run with the network never reaches by route: this
// network, the private, shared, link-local and reserved ranges. The tap's
// own network (10.0.2.0/24, more specific than 10/8) is shut by its two
// halves: the kernel's route for it is more specific than 10/8.
var shutRanges = []string{
	"0.0.0.0/8", "10.0.0.0/8", "10.0.2.0/25", "10.0.2.128/25", "100.64.0.0/10",
	"169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15",
	"224.0.0.0/4", "240.0.0.0/4",
}

// jailNetwork shuts the run's routes to the host and opens its listeners:
// the DNS relay's (UDP and TCP on dnsAddr:53) and one per allowed pair,
// on an address of the namespace's loopback, handed to the server in that
// order. It runs while the helper still holds its capabilities.
func jailNetwork(spec Spec) error {
	if err := loopbackUp(); err != nil {
		return err
	}
	nl, err := openNetlink()
	if err != nil {
		return err
	}
	defer unix.Close(nl)
	shut := make([]netip.Prefix, 0, len(shutRanges)+len(spec.HostLocal))
	for _, r := range shutRanges {
		shut = append(shut, netip.MustParsePrefix(r))
	}
	shut = append(shut, spec.HostLocal...)
	for _, p := range shut {
		if !p.Addr().Is4() {
			continue // the run has no IPv6 beyond its own loopback (below)
		}
		if err := addRoute(nl, p.Masked()); err != nil && err != unix.EEXIST {
			return fmt.Errorf("shutting the route to %s: %w", p, err)
		}
	}
	// slirp4netns gives the run no IPv6 (no --enable-ipv6); the tap has
	// none at all, not even a link-local address.
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/"+tapDevice+"/disable_ipv6", []byte("1"), 0); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("turning IPv6 off on the run's network device: %w", err)
	}
	lo, err := ifIndex("lo")
	if err != nil {
		return err
	}
	addrs := []netip.Addr{dnsAddr}
	for _, a := range spec.AllowHosts {
		addrs = append(addrs, a.Addr())
	}
	for _, a := range addrs {
		if a.IsLoopback() {
			continue
		}
		if err := addAddr(nl, lo, a); err != nil && err != unix.EEXIST {
			return fmt.Errorf("adding %s to the run's loopback: %w", a, err)
		}
	}
	fds, err := netListeners(spec.AllowHosts)
	if err != nil {
		return err
	}
	defer closeFDs(fds)
	return must("handing the server the run's listeners", unix.Sendmsg(netFD, []byte{2}, unix.UnixRights(fds...), nil, 0))
}

// netListeners opens the DNS relay's sockets and the allowed pairs'.
func netListeners(allow []netip.AddrPort) ([]int, error) {
	var fds []int
	open := func(typ int, ap netip.AddrPort) error {
		fam := unix.AF_INET6
		var sa unix.Sockaddr = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
		if ap.Addr().Is4() {
			fam, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
		}
		fd, err := unix.Socket(fam, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		fds = append(fds, fd)
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			return err
		}
		if err := unix.Bind(fd, sa); err != nil {
			return fmt.Errorf("listening on %s in the run's namespace: %w", ap, err)
		}
		if typ == unix.SOCK_STREAM {
			return unix.Listen(fd, 64)
		}
		return nil
	}
	dns := netip.AddrPortFrom(dnsAddr, 53)
	err := open(unix.SOCK_DGRAM, dns)
	if err == nil {
		err = open(unix.SOCK_STREAM, dns)
	}
	for _, ap := range allow {
		if err == nil {
			err = open(unix.SOCK_STREAM, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		}
	}
	if err != nil {
		closeFDs(fds)
		return nil, err
	}
	return fds, nil
}

// resolvConf is the run's /etc/resolv.conf with the network: the relay as
// its only nameserver, the host's search domains and options kept.
func resolvConf() string {
	var b strings.Builder
	b.WriteString("nameserver " + dnsAddr.String() + "\n")
	host, _ := os.ReadFile("/etc/resolv.conf") // none: no search domains
	for _, line := range strings.Split(string(host), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && (f[0] == "search" || f[0] == "domain" || f[0] == "options") {
			b.WriteString(strings.Join(f, " ") + "\n")
		}
	}
	return b.String()
}

func ifIndex(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("the index of %s: %w", name, err)
	}
	return int(ifr.Uint32()), nil
}

func openNetlink() (int, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return -1, fmt.Errorf("netlink: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("netlink: %w", err)
	}
	return fd, nil
}

// addRoute adds a route of type prohibit for p to the main table.
func addRoute(nl int, p netip.Prefix) error {
	body := make([]byte, unix.SizeofRtMsg)
	body[0] = unix.AF_INET
	body[1] = byte(p.Bits())         // dst_len
	body[4] = unix.RT_TABLE_MAIN     // table
	body[5] = unix.RTPROT_STATIC     // protocol
	body[6] = unix.RT_SCOPE_UNIVERSE // scope
	body[7] = unix.RTN_PROHIBIT      // type
	a := p.Addr().As4()
	body = appendAttr(body, unix.RTA_DST, a[:])
	return netlinkDo(nl, unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_EXCL, body)
}

// addAddr adds a to the interface index as a host address.
func addAddr(nl, index int, a netip.Addr) error {
	body := make([]byte, unix.SizeofIfAddrmsg)
	raw := a.AsSlice()
	body[0], body[1] = unix.AF_INET, 32
	if len(raw) == 16 {
		body[0], body[1] = unix.AF_INET6, 128
	}
	body[3] = unix.RT_SCOPE_HOST
	binary.NativeEndian.PutUint32(body[4:], uint32(index))
	body = appendAttr(body, unix.IFA_LOCAL, raw)
	body = appendAttr(body, unix.IFA_ADDRESS, raw)
	return netlinkDo(nl, unix.RTM_NEWADDR, unix.NLM_F_CREATE|unix.NLM_F_EXCL, body)
}

func appendAttr(b []byte, typ uint16, data []byte) []byte {
	l := unix.SizeofRtAttr + len(data)
	hdr := make([]byte, unix.SizeofRtAttr)
	binary.NativeEndian.PutUint16(hdr[0:], uint16(l))
	binary.NativeEndian.PutUint16(hdr[2:], typ)
	b = append(append(b, hdr...), data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// netlinkDo sends one request and returns the kernel's answer to it.
func netlinkDo(nl int, typ uint16, flags int, body []byte) error {
	msg := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(body))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.SizeofNlMsghdr+len(body)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], uint16(unix.NLM_F_REQUEST|unix.NLM_F_ACK|flags))
	binary.NativeEndian.PutUint32(msg[8:], 1)
	msg = append(msg, body...)
	if err := unix.Sendto(nl, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(nl, buf, 0)
	if err != nil {
		return err
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if m.Header.Type == syscall.NLMSG_ERROR && len(m.Data) >= 4 {
			if e := int32(binary.NativeEndian.Uint32(m.Data[:4])); e != 0 {
				return unix.Errno(-e)
			}
			return nil
		}
	}
	return fmt.Errorf("netlink: no answer")
}
