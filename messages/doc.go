// Package messages holds every message the actors exchange and the public
// events and commands of the harness. Events and commands (events.go,
// commands.go) are the contract the CLI prints and the host serves; the other
// files are the actor protocols, one file per protocol. Messages are plain
// structs sent as pointers; each type's doc says who sends it, who receives
// it, and the reply.
package messages
