package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrNoNetworkStack: slirp4netns, which gives a run the network, is not
// installed; runs without the network are unaffected.
var ErrNoNetworkStack = errors.New("a run with the network needs slirp4netns, which is not installed here (Debian and Ubuntu: apt-get install slirp4netns)")

// NetworkStack says why a run with the network cannot be given one here,
// or nil.
func NetworkStack() error {
	if _, err := exec.LookPath("slirp4netns"); err != nil {
		return ErrNoNetworkStack
	}
	return nil
}

// slirpReady bounds slirp4netns's start: it makes the tap in the helper's
// namespace and configures it.
const slirpReady = 10 * time.Second

// netStack is the slirp4netns of one run with the network: a user-mode
// network stack (libslirp, as rootless podman uses) that turns what the run
// sends on its tap into the server's own sockets. It was chosen over
// passt's pasta because Debian 12's pasta is a 2023 snapshot, and because
// slirp4netns has --disable-host-loopback and --disable-dns, which keep
// its gateway and DNS addresses off the host; what it does not filter, the
// run's routes shut (netjail_linux.go).
type netStack struct {
	cmd    *exec.Cmd
	exitW  *os.File // closing it ends slirp4netns (--exit-fd)
	stderr *bytes.Buffer
}

// startSlirp connects the network namespace of pid to the internet and
// returns once its tap is configured.
func startSlirp(pid int) (*netStack, error) {
	path, err := exec.LookPath("slirp4netns")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSetup, ErrNoNetworkStack)
	}
	exitR, exitW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		exitR.Close()
		exitW.Close()
		return nil, err
	}
	defer readyR.Close()
	n := &netStack{exitW: exitW, stderr: &bytes.Buffer{}}
	n.cmd = exec.Command(path, "--configure", "--disable-host-loopback", "--disable-dns", "--mtu=65520", "--enable-sandbox", "--enable-seccomp",
		"--exit-fd=3", "--ready-fd=4", strconv.Itoa(pid), tapDevice)
	n.cmd.ExtraFiles = []*os.File{exitR, readyW}
	n.cmd.Stdout, n.cmd.Stderr = io.Discard, n.stderr
	// It dies with the server, and a terminal's signals meant for the
	// server do not reach it.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	err = n.cmd.Start()
	exitR.Close()
	readyW.Close()
	if err != nil {
		exitW.Close()
		return nil, fmt.Errorf("starting slirp4netns: %w", err)
	}
	if err := readyR.SetReadDeadline(time.Now().Add(slirpReady)); err != nil {
		n.stop()
		return nil, err
	}
	if _, err := readyR.Read(make([]byte, 1)); err != nil {
		n.stop()
		return nil, fmt.Errorf("slirp4netns did not bring the run's network up (%v): %s", err, strings.TrimSpace(n.stderr.String()))
	}
	return n, nil
}

// stop ends slirp4netns. It holds nothing to flush, so it is killed; and
// not waited for on the run's path: its exit frees the tap device, which
// the kernel takes tens of milliseconds to unregister. Its exit
// descriptor ends it should the server die first.
func (n *netStack) stop() {
	if n == nil {
		return
	}
	_ = n.cmd.Process.Kill() // it is gone already if this fails
	go func() {
		_ = n.cmd.Wait() // its status says nothing the run needs
		n.exitW.Close()
	}()
}

// hostLocal is every prefix the host delivers to itself: its local routes
// (each address of each interface, whole local ranges) and, should the
// routes not be readable, its interfaces' addresses. slirp4netns's sockets
// live in the host's namespace, where a connect to any of them reaches the
// host's own services.
func hostLocal() []netip.Prefix {
	var ps []netip.Prefix
	if b, err := syscall.NetlinkRIB(syscall.RTM_GETROUTE, syscall.AF_INET); err == nil {
		ps = append(ps, localRoutes(b)...)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
					ps = append(ps, netip.PrefixFrom(ip.Unmap(), 32))
				}
			}
		}
	}
	return ps
}

// localRoutes are the IPv4 prefixes of a route dump's local and broadcast
// routes.
func localRoutes(b []byte) []netip.Prefix {
	msgs, err := syscall.ParseNetlinkMessage(b)
	if err != nil {
		return nil
	}
	var ps []netip.Prefix
	for _, m := range msgs {
		if m.Header.Type != syscall.RTM_NEWROUTE || len(m.Data) < syscall.SizeofRtMsg {
			continue
		}
		rt := (*syscall.RtMsg)(unsafe.Pointer(&m.Data[0]))
		if rt.Family != syscall.AF_INET || rt.Type != syscall.RTN_LOCAL && rt.Type != syscall.RTN_BROADCAST {
			continue
		}
		attrs, err := syscall.ParseNetlinkRouteAttr(&m)
		if err != nil {
			continue
		}
		for _, a := range attrs {
			if a.Attr.Type == syscall.RTA_DST && len(a.Value) == 4 {
				ps = append(ps, netip.PrefixFrom(netip.AddrFrom4([4]byte(a.Value)), int(rt.Dst_len)))
			}
		}
	}
	return ps
}

// netServer answers a run's listeners from the host: the DNS relay to the
// host's resolver, and each allowed pair's forwarder to that pair.
type netServer struct {
	mu     sync.Mutex
	closed bool
	open   []io.Closer
	wg     sync.WaitGroup
	// ctx ends the dials under way when the run ends.
	ctx    context.Context
	cancel context.CancelFunc
	// conns bounds the connections the run has forwarded at once: each
	// holds two of the server's descriptors.
	conns chan struct{}
}

// maxForwarded is how many connections one run may have forwarded at once
// (DNS over TCP and the allowed pairs together); more are closed at once.
const maxForwarded = 256

// serveNet receives the run's listeners from the helper (netjail's
// order: DNS over UDP and TCP, then one per allowed pair) and serves them
// until stop.
func serveNet(sock *os.File, allow []netip.AddrPort) *netServer {
	s := &netServer{conns: make(chan struct{}, maxForwarded)}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fds := receiveFDs(sock, 2+len(allow))
		files := make([]*os.File, len(fds))
		for i, fd := range fds {
			files[i] = os.NewFile(uintptr(fd), "run-listener")
		}
		defer func() {
			for _, f := range files {
				f.Close() // net.File* made their own copies
			}
		}()
		if len(fds) != 2+len(allow) {
			return // the helper failed before its listeners: it says why
		}
		if pc, err := net.FilePacketConn(files[0]); err == nil && s.track(pc) {
			s.go_(func() { relayDNS(pc) })
		}
		s.forward(files[1], nameservers()[0], 5*time.Second)
		for i, ap := range allow {
			s.forward(files[2+i], ap.String(), 10*time.Second)
		}
	}()
	return s
}

func (s *netServer) go_(f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f()
	}()
}

// track keeps c to be closed at stop; false (and c closed) once stopped.
func (s *netServer) track(c io.Closer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		c.Close()
		return false
	}
	s.open = append(s.open, c)
	return true
}

// stop closes every listener and connection of the run and waits for
// their goroutines.
func (s *netServer) stop() {
	if s == nil {
		return
	}
	s.cancel()
	s.mu.Lock()
	s.closed = true
	for _, c := range s.open {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// forward accepts on the listener f and joins each connection to one to
// target (host:port) on the host.
func (s *netServer) forward(f *os.File, target string, timeout time.Duration) {
	d := &net.Dialer{Timeout: timeout}
	dial := func() (net.Conn, error) { return d.DialContext(s.ctx, "tcp", target) }
	ln, err := net.FileListener(f)
	if err != nil || !s.track(ln) {
		return
	}
	s.go_(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if !s.track(c) {
				return
			}
			select {
			case s.conns <- struct{}{}:
			default:
				c.Close()
				continue
			}
			s.go_(func() {
				defer func() { <-s.conns }()
				s.join(c, dial)
			})
		}
	})
}

func (s *netServer) join(c net.Conn, dial func() (net.Conn, error)) {
	defer c.Close()
	up, err := dial()
	if err != nil || !s.track(up) {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pump := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // either side's end ends the pair
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pump(up, c)
	go pump(c, up)
	<-done
	<-done
}

// relayDNS answers each query the run sends with the host's resolver's
// answer; at most 32 at a time, the rest dropped (the run's resolver
// retries).
func relayDNS(pc net.PacketConn) {
	sem := make(chan struct{}, 32)
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		q := bytes.Clone(buf[:n])
		select {
		case sem <- struct{}{}:
		default:
			continue
		}
		go func() {
			defer func() { <-sem }()
			if a := exchangeDNS(q); a != nil {
				_, _ = pc.WriteTo(a, from) // a run that left is not answered
			}
		}()
	}
}

// exchangeDNS asks the host's nameservers in turn; nil when none answers.
func exchangeDNS(q []byte) []byte {
	for _, ns := range nameservers() {
		c, err := net.DialTimeout("udp", ns, 2*time.Second)
		if err != nil {
			continue
		}
		_ = c.SetDeadline(time.Now().Add(3 * time.Second)) // a failed deadline fails the read below
		a := make([]byte, 65535)
		_, err = c.Write(q)
		var n int
		if err == nil {
			n, err = c.Read(a)
		}
		c.Close()
		if err == nil {
			return a[:n]
		}
	}
	return nil
}

// nameservers are the host's resolver's addresses (port 53), as its
// /etc/resolv.conf names them; the resolver's default when it names none.
func nameservers() []string {
	var ns []string
	if f, err := os.Open("/etc/resolv.conf"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "nameserver" {
				if _, err := netip.ParseAddr(fs[1]); err == nil {
					ns = append(ns, net.JoinHostPort(fs[1], "53"))
				}
			}
		}
	}
	if len(ns) == 0 {
		ns = []string{"127.0.0.1:53"}
	}
	return ns
}

// receiveFDs reads one message of up to n descriptors from sock; none when
// the helper ended before sending.
func receiveFDs(sock *os.File, n int) []int {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4*n))
	_, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}
