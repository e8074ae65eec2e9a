package messages_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agyharness/agyharness/messages"
)

// contract and protocol are the package's types, in its two halves.
var (
	contract = []reflect.Type{
		reflect.TypeFor[messages.Event](), reflect.TypeFor[messages.EventType](),
		reflect.TypeFor[messages.Question](), reflect.TypeFor[messages.Option](),
		reflect.TypeFor[messages.CommandLine](), reflect.TypeFor[messages.Resource](), reflect.TypeFor[messages.Choice](),
		reflect.TypeFor[messages.Location](), reflect.TypeFor[messages.FileDiff](),
		reflect.TypeFor[messages.Hit](),
		reflect.TypeFor[messages.MCPElicitation](),
		reflect.TypeFor[messages.Command](), reflect.TypeFor[messages.CommandType](),
		reflect.TypeFor[messages.Answer](), reflect.TypeFor[messages.Resolve](),
	}
	protocol = []reflect.Type{
		reflect.TypeFor[messages.Gen](), reflect.TypeFor[messages.PortFound](),
		reflect.TypeFor[messages.DiscoveryStalled](), reflect.TypeFor[messages.PortLost](),
		reflect.TypeFor[messages.StreamState](), reflect.TypeFor[messages.SnapshotRead](),
		reflect.TypeFor[messages.TurnActive](), reflect.TypeFor[messages.ReadNow](),
		reflect.TypeFor[messages.ConversationRotated](),
		reflect.TypeFor[messages.SubagentDone](),
		reflect.TypeFor[messages.SendTurn](), reflect.TypeFor[messages.TurnResult](),
		reflect.TypeFor[messages.Interrupt](), reflect.TypeFor[messages.ConversationFrom](),
		reflect.TypeFor[messages.RunTurn](), reflect.TypeFor[messages.StopRun](),
		reflect.TypeFor[messages.ModelsLoaded](),
		reflect.TypeFor[messages.ResolveElicitation](), reflect.TypeFor[messages.ResolveAccepted](),
		reflect.TypeFor[messages.DeliverAnswer](), reflect.TypeFor[messages.AnswerDelivered](),
		reflect.TypeFor[messages.AnswerFailed](),
	}
)

// parsed is the package as its source declares it.
func parsed(t *testing.T) (*doc.Package, map[string]string) {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{} // type -> file
	var list []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		list = append(list, f)
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					files[s.(*ast.TypeSpec).Name.Name] = name
				}
			}
		}
	}
	p, err := doc.NewFromFiles(fset, list, "github.com/agyharness/agyharness/messages")
	if err != nil {
		t.Fatal(err)
	}
	return p, files
}

// TestEveryTypeIsInOneHalf: each type the package declares is in exactly
// one half, in a file of that half, and the package doc lists it in that
// half's section.
func TestEveryTypeIsInOneHalf(t *testing.T) {
	p, files := parsed(t)
	section := func(title string) string {
		_, after, ok := strings.Cut(p.Doc, "# "+title)
		if !ok {
			t.Fatalf("the package doc has no section %q", title)
		}
		before, _, _ := strings.Cut(after, "\n# ")
		return before
	}
	halves := []struct {
		name  string
		types []reflect.Type
		doc   string
		file  func(string) bool
	}{
		{"the public contract", contract, section("The public contract"),
			func(f string) bool { return !strings.HasPrefix(f, "protocol_") }},
		{"the tree's protocol", protocol, section("The tree's protocol"),
			func(f string) bool { return strings.HasPrefix(f, "protocol_") }},
	}
	listed := map[string]bool{}
	for _, h := range halves {
		for _, typ := range h.types {
			name := typ.Name()
			if listed[name] {
				t.Errorf("%s is in both halves", name)
			}
			listed[name] = true
			if !regexp.MustCompile(`\b` + name + `\b`).MatchString(h.doc) {
				t.Errorf("the package doc does not list %s in %s", name, h.name)
			}
			if !h.file(files[name]) {
				t.Errorf("%s is declared in %s, not a file of %s", name, files[name], h.name)
			}
		}
	}
	for name := range files {
		if !listed[name] {
			t.Errorf("%s is in neither half: add it to this test's lists and to the package doc", name)
		}
	}
}

// TestNoMessageHoldsALiveObject: nothing in the package holds a client, a
// channel or a function, however deep (error is the one interface allowed):
// a message that must carry a live object is the actors package's own.
func TestNoMessageHoldsALiveObject(t *testing.T) {
	for _, typ := range slices.Concat(contract, protocol) {
		if path := live(typ, map[reflect.Type]bool{}); path != "" {
			t.Errorf("%s holds %s", typ.Name(), path)
		}
	}
}

var errorType = reflect.TypeFor[error]()

// live returns the path to a channel, function or interface (other than
// error) in typ, or "".
func live(typ reflect.Type, seen map[reflect.Type]bool) string {
	if seen[typ] {
		return ""
	}
	seen[typ] = true
	switch typ.Kind() {
	case reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return typ.String()
	case reflect.Interface:
		if typ == errorType {
			return ""
		}
		return typ.String()
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return live(typ.Elem(), seen)
	case reflect.Map:
		if p := live(typ.Key(), seen); p != "" {
			return p
		}
		return live(typ.Elem(), seen)
	case reflect.Struct:
		for f := range typ.Fields() {
			if p := live(f.Type, seen); p != "" {
				return typ.String() + "." + f.Name + ": " + p
			}
		}
	}
	return ""
}
