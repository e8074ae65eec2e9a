package acp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/agyharness/agyharness/rpc/agytest"
	"github.com/stretchr/testify/require"
)

// e2eScenario is what the fake agy does for the TypeScript client
// (testdata/e2e/client.mjs): "deploy" asks to run `make deploy`; any other
// turn thinks, talks, runs an approved `ls -la` (its output streamed as it
// grows), edits main.go and sums up.
func e2eScenario() *agytest.Scenario {
	return &agytest.Scenario{Name: "acp-e2e", Turns: []agytest.TurnScript{
		{Match: "deploy", Actions: []agytest.Action{
			agytest.Say("Deploying now.", 3),
			agytest.Run(agytest.CommandAction{Line: "make deploy", Output: "deployed\n", NeedsApproval: true}),
			agytest.Say("Deployed.", 1),
		}},
		{Actions: []agytest.Action{
			agytest.Think("The user wants the files listed. I should look before answering."),
			agytest.Say("Let me look at the workspace first.", 5),
			agytest.Run(agytest.CommandAction{Line: "ls -la", Cwd: "/workspace", Output: "total 8\ngo.mod\nmain.go\n", NeedsApproval: true, Chunks: 3}),
			agytest.Edit(agytest.EditAction{Path: "/workspace/main.go", Chunks: []agytest.EditChunk{{Old: "func main() {}\n", New: "func main() { println(\"hi\") }\n", Line: 3}}}),
			agytest.Say("The workspace holds main.go.", 4),
		}},
	}}
}

// TestEndToEndWithTheTypeScriptSDK runs the official TypeScript ACP SDK
// (@agentclientprotocol/sdk, pinned in testdata/e2e/package.json) as the
// client of the built binary, attached to a fake agy by port. It needs
// node; it runs `npm ci` when testdata/e2e/node_modules is missing.
func TestEndToEndWithTheTypeScriptSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the ACP end-to-end test needs Node.js")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "e2e"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk")); err != nil {
		npm, err := exec.LookPath("npm")
		require.NoError(t, err, "node_modules is missing and npm is not installed")
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci in %s:\n%s", dir, out)
	}

	bin := buildAgent(t, ctx)
	t.Logf("agent: %v", bin)
	srv := agytest.Start(t, agytest.Options{Conversation: true, Scenario: e2eScenario(), ChunkDelay: time.Millisecond, PromptTimeout: -1})
	argv, err := json.Marshal(append(bin, "--attach-port", strconv.Itoa(srv.Port()), "--cancel-deadline", "5s"))
	require.NoError(t, err)

	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "AGYHARNESS_ACP_CMD="+string(argv))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	require.NoError(t, err, "the TypeScript ACP client failed:\n%s", out.String())
	t.Logf("client: %s", bytes.TrimSpace(out.Bytes()))
}

// buildAgent builds the agent binary and returns its command line: the
// real `agyharness acp` when the CLI has the subcommand, else the
// test-only internal/acpmain (which is acp.Main on its own).
func buildAgent(t *testing.T, ctx context.Context) []string {
	t.Helper()
	tmp := t.TempDir()
	cli := filepath.Join(tmp, "agyharness")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", cli, "..").CombinedOutput(); err == nil {
		if exec.CommandContext(ctx, cli, "acp", "--help").Run() == nil {
			return []string{cli, "acp"}
		}
	} else {
		t.Logf("building the CLI failed; using internal/acpmain: %s", out)
	}
	bin := filepath.Join(tmp, "acpmain")
	out, err := exec.CommandContext(ctx, "go", "build", "-race", "-o", bin, "./internal/acpmain").CombinedOutput()
	require.NoError(t, err, "go build ./internal/acpmain:\n%s", out)
	return []string{bin}
}
