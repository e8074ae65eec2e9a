// Package messages holds the harness's public contract and, apart from it,
// the messages the actors of the supervision tree exchange.
//
// # The public contract
//
// What the CLI prints and the host serves, and what an embedder of package
// actors reads and sends: JSON-encoded, stable (docs/ARCHITECTURE.md, "The
// event contract"; every type and field: docs/EVENTS.md). In
// events.go and commands.go:
//
//   - Event, the unit of a session's output, and EventType with its
//     constants (EventStatus, EventMessage, ...); the values events carry:
//     Question, Option, CommandLine, Resource, Choice, Location, FileDiff, Hit,
//     MCPElicitation (and MaxInteractionRaw, the bound of Event.Raw); the
//     states, origins, kinds, tool kinds, actions and resolvers
//     (StateRunning, OriginHarness, KindQuestion, ToolRead, ActionAccept,
//     ByHarness, ...); Ptr.
//   - Command, a driver's command, and CommandType with its constants;
//     Answer and Resolve.
//
// # The tree's protocol
//
// The messages the actors of package actors send one another, and the
// requests its embedding API sends a session (in protocol_*.go, one file
// per actor the session talks with). They are internal to the tree: package actors sends and
// receives every one of them, nothing outside it should, and they change
// with it. They are kept here, not in package actors, because they are
// plain values that could cross a node: none holds a client, a channel or a
// function (a message that must carry a live object is the actors
// package's own, unexported).
//
//   - session (the embedding API's requests): SendTurn, Interrupt,
//     TurnResult, ResolveElicitation, ResolveAccepted.
//   - discovery: Gen, PortFound, DiscoveryStalled, PortLost.
//   - stream: StreamState.
//   - poller: SnapshotRead, TurnActive, ReadNow.
//   - rotation: ConversationRotated.
//   - subagent: SubagentDone.
//   - turnsender: RunTurn, StopRun, ConversationFrom, ModelsLoaded.
//   - interaction: DeliverAnswer, AnswerDelivered, AnswerFailed.
//
// Messages are plain structs sent as pointers; each type's doc says who
// sends it, who receives it, and the reply.
package messages
