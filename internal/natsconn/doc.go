// Package natsconn is how airlock's commands reach a fleet's NATS
// servers: the --store flag and the credentials beside it (a creds file,
// user and password or a token, TLS), checked before anything connects,
// and the connection made from them. Secrets come from the URL or the
// environment, never from a flag's value, so that ps shows none.
package natsconn
