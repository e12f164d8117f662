// Package hub is the registry of airlock serve --http: every MCP client
// session that opens with the server's token gets a sandbox of its own (a
// durable session, unless the server keeps them in memory only), with a
// token of its own that opens it again after a reconnect, also after the
// server restarted. The sandboxes share the server's gate, ledger and
// broker (in the session.Options the hub is given).
//
// It owns who may reach which sandbox (tokens: the server's, each
// sandbox's, and those saved sessions recorded), how many are live and how
// much they hold (unloading the least recently used idle durable sandbox
// to make room, which resumes on its token), resuming a saved sandbox for
// a returning client, and the door every request passes first (browsers'
// cross-origin requests, rebound host names, bodies bounded by rpcguard
// before the MCP SDK reads them).
//
// In a fleet (Config.Store a fleet's store, which tells who holds a
// session: Holders), a request for a session another server holds is
// forwarded to that server (a reverse proxy, streaming: an MCP event
// stream flows as it comes), the client's bearer token with it; a request
// is forwarded at most once (ForwardedHeader). It is not redirected: the
// fetch of browsers and of the MCP SDKs drops the Authorization header on
// a redirect to another origin, so a 307 would lose the session's token.
// A holder that does not answer (connection refused, or AlivePath not
// answering within a second) is taken for dead: its lease is broken at
// the revision read (fencing stops it writing should it be alive after
// all) and the session resumed here, without waiting out the lease's
// TTL. A lease in this server's own name that it does not hold is a
// killed run's of this server, and is broken at once.
//
// Lock order: Hub.mu is never held while a session's own lock is taken
// (asking a session whether it is busy, closing it): the hub marks the
// sandbox it is about to unload as being opened or closed, so that
// requests for it wait, and asks without its lock.
package hub
