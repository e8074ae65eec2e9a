// Command agyharness drives Google Antigravity's CLI (agy) through the
// connect-RPC API of its local language server.
//
// Usage:
//
//	agyharness sim     [--scenario F] [--json] [--yes] [--seed S] [--record F]
//	agyharness attach  (--pid N | --port P) [--conversation ID] [--csrf-token T] [--json] [--record F]
//	agyharness launch  [--tmux-session NAME] [--agy PATH] [-- AGY_ARGS]
//	agyharness serve   [--listen 127.0.0.1:7420] [--token-file F] [--allow-remote]
//	agyharness replay  FILE [--json]
//	agyharness acp     [flags]   (the Agent Client Protocol adapter, package acp)
//	agyharness version
//
// Events go to stdout (one JSON object per line with --json, else a human
// rendering); logs go to stderr. Exit codes: 0 success, 1 runtime failure,
// 2 usage error. "agyharness help COMMAND" shows a command's flags and an
// example.
package main
