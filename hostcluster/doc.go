// Package hostcluster joins agyharness hosts into one Proto.Actor cluster,
// so that any node's API lists, creates, drives and watches every session
// of every node.
//
// A session stays on the node that attached it (its agy's language server
// is loopback-only, on that machine). Each node spawns one well-known node
// actor ("agyharness-node"); the others reach it at the address the
// cluster's membership provider (etcd, or Proto.Actor's automanaged
// provider) gives for that member, over Proto.Actor remote. Listing asks
// every live member; a session's node is remembered from listings and
// creations. The messages between nodes are the protobuf types of
// clusterpb, generated from clusterpb/hostcluster.proto, each with a
// version.
//
// A session's events are read from another node through a stream: the
// reading node's stream actor subscribes at the owner's node actor, which
// spawns a feeder that reads the session's local subscription from the
// requested seq and sends batches under credit the reader returns as its
// consumer takes events. A stream ends when the session does, or with a
// node_lost error event when the owner's node leaves the cluster or its
// connection breaks.
//
// A session's documents (its transcript, agy's models) are read from its
// node in pieces of one snapshot the owner keeps meanwhile (Node.Read): a
// transcript is more than one remote message should carry.
//
// Remote runs over mutual TLS: a node obeys only callers whose certificate
// the cluster's CA signed (WriteCerts makes the CA and the nodes'
// certificates, LoadMutualTLS the configuration). Start refuses a Config
// without it unless InsecureNoAuth. The automanaged provider's membership
// HTTP cannot be authenticated (Proto.Actor's provider); Etcd takes TLS and
// a user.
//
// Local is what a node serves: cmd/agyharness implements it over its HTTP
// host's sessions.
package hostcluster
