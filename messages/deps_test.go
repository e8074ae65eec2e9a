package messages_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The contract compiles no client and no transport: a consumer of Event
// builds package wire, and nothing of rpc, net/http, x/net or crypto/tls.
func TestMessagesImportNoTransport(t *testing.T) {
	for _, pkg := range []string{"github.com/agyharness/agyharness/messages", "github.com/agyharness/agyharness/wire"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/agyharness/agyharness/rpc" || strings.HasPrefix(dep, "github.com/agyharness/agyharness/rpc/") ||
				dep == "net/http" || dep == "crypto/tls" || strings.HasPrefix(dep, "golang.org/x/net/") {
				t.Errorf("%s depends on %s", pkg, dep)
			}
		}
	}
}
