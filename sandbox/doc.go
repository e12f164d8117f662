// Package sandbox runs a worker's command where it can do no harm: inside
// new user, mount, PID, IPC, UTS and network namespaces, behind Landlock
// and a seccomp filter, with rlimits, seeing the workspace and nothing of
// the host's but its system directories, read-only.
//
// The airlock binary re-executes itself as the jail's first process
// (Main, called first thing in main and in TestMain); that helper builds
// the file system view, drops every capability, restricts itself and execs
// the command, which becomes the PID namespace's init: when it exits, the
// kernel kills everything it left behind. The run's processes share one
// memory and process budget: a cgroup v2 where one is delegated, or their
// count and a watch on their memory (budget_linux.go, Budget).
//
// What the process sees:
//
//	/workspace          the worker's workspace: an overlay whose lower layer
//	                    is the session's mirror (a tmpfs copy kept up to date
//	                    in O(changed)) and whose upper layer records exactly
//	                    what the run changed (package sandbox/mirror makes
//	                    both and reads the changes back)
//	/usr /bin /lib ...  the host's, read-only
//	/etc                a few files of the host's (dynamic linker, certificates,
//	                    alternatives), read-only, and a passwd of its own; with
//	                    the network the host's resolver configuration
//	                    (nsswitch.conf, hosts, gai.conf) and a resolv.conf
//	                    naming the server's relay (10.0.2.3), without
//	                    it a hosts and nsswitch.conf of its own (files only)
//	/home/sandbox /tmp /dev/shm  empty, private, in memory: one tmpfs of
//	                    Spec.Scratch's bytes and files (bounds_linux.go)
//	/home/sandbox/.cache  Spec.Cache under a writable layer of Spec.CacheRoom,
//	                    merged into it after the run when it fits
//	                    (mirror.MergeLayer)
//	/proc /dev          its own PID namespace's; null, zero, random, urandom
//	extra paths         what the operator named, read-only, at the same path
//
// A root server's jail acts as nobody, which cannot walk to paths under
// /root: the server sends the cache and the extra paths as detached mounts
// (see mounts_linux.go).
//
// The server user's home, the broker's sockets, airlock's state and every
// other path of the host are not in the mount namespace at all; Landlock
// forbids them again should a mount be missed. The network namespace has
// only a loopback interface of its own unless the run has the network:
// then also a tap device that slirp4netns joins to the internet, with the
// host's own addresses, its loopback, link-local and the private ranges
// shut by routes the command cannot change, names resolved by the
// server's relay and the operator's allowed pairs forwarded by the server,
// nothing else (netjail_linux.go, netstack_linux.go). The environment is
// built, never inherited.
package sandbox
