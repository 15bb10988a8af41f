package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/server/request"
)

func TestParseTokenFile(t *testing.T) {
	const file = `token1,user1,uid1
token2,user2,uid2,"group1,group2"

"token,3",user3,uid3,group3
token4,user4,uid4,
dup,first,1
,emptytoken,0
dup,second,2
`
	tf, err := ParseTokenFile(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		token string
		want  *request.User
	}{
		{"token1", &request.User{Name: "user1", UID: "uid1"}},
		{"token2", &request.User{Name: "user2", UID: "uid2", Groups: []string{"group1", "group2"}}},
		{"token,3", &request.User{Name: "user3", UID: "uid3", Groups: []string{"group3"}}},
		// kube splits an empty fourth column into one empty group.
		{"token4", &request.User{Name: "user4", UID: "uid4", Groups: []string{""}}},
		{"dup", &request.User{Name: "second", UID: "2"}},
		{"", nil},
		{"token5", nil},
		{"token", nil},
	}
	for _, tt := range tests {
		got, ok := tf.lookup(tt.token)
		if (tt.want == nil) != !ok {
			t.Errorf("lookup(%q) ok = %v, want %v", tt.token, ok, tt.want != nil)
			continue
		}
		if ok && !equalUser(got, tt.want) {
			t.Errorf("lookup(%q) = %+v, want %+v", tt.token, got, tt.want)
		}
	}
	if tf.Len() != 5 {
		t.Errorf("Len = %d, want 5", tf.Len())
	}
}

func TestParseTokenFileErrors(t *testing.T) {
	for _, file := range []string{
		"token,user\n",
		"# comment,user,uid\nonlyone\n", // no comment syntax in kube: '#…' is a record
		`"unterminated,user,uid`,
	} {
		if _, err := ParseTokenFile(strings.NewReader(file)); !errors.Is(err, ErrTokenFile) {
			t.Errorf("ParseTokenFile(%q) err = %v, want ErrTokenFile", file, err)
		}
	}
}

func TestTokenFileAuthenticate(t *testing.T) {
	tf, err := ParseTokenFile(strings.NewReader("secret,alice,1,\"dev\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		header  string
		wantOK  bool
		wantErr bool
	}{
		{"Bearer secret", true, false},
		{"bearer secret", true, false},
		{"BEARER secret", true, false},
		{"  Bearer secret  ", true, false},
		{"Bearer secret trailing", true, false}, // kube ignores a third field
		{"Bearer wrong", false, true},
		{"Bearer  secret", false, false}, // empty token field: no credential
		{"Bearer", false, false},
		{"Basic c2VjcmV0", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		u, ok, err := tf.Authenticate(r)
		if ok != tt.wantOK || (err != nil) != tt.wantErr {
			t.Errorf("%q: ok=%v err=%v, want ok=%v err=%v", tt.header, ok, err, tt.wantOK, tt.wantErr)
		}
		if ok && u.Name != "alice" {
			t.Errorf("%q: user %q", tt.header, u.Name)
		}
		if tt.wantErr && !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%q: err %v, want ErrInvalidToken", tt.header, err)
		}
	}
}

func TestTokenFileReturnsCopies(t *testing.T) {
	tf, _ := ParseTokenFile(strings.NewReader("t,u,1,\"g\"\n"))
	u, _ := tf.lookup("t")
	u.Groups[0] = "system:masters"
	u2, _ := tf.lookup("t")
	if u2.Groups[0] != "g" {
		t.Fatal("caller mutated the token file's user")
	}
}

func TestUnion(t *testing.T) {
	errA := errors.New("a broke")
	none := AuthenticatorFunc(func(*http.Request) (*request.User, bool, error) { return nil, false, nil })
	fail := AuthenticatorFunc(func(*http.Request) (*request.User, bool, error) { return nil, false, errA })
	bob := AuthenticatorFunc(func(*http.Request) (*request.User, bool, error) {
		return &request.User{Name: "bob"}, true, nil
	})
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if u, ok, err := (Union{none, fail, bob}).Authenticate(r); !ok || err != nil || u.Name != "bob" {
		t.Errorf("none,fail,bob = %v %v %v", u, ok, err)
	}
	if _, ok, err := (Union{none, fail}).Authenticate(r); ok || !errors.Is(err, errA) {
		t.Errorf("none,fail = %v %v, want the error", ok, err)
	}
	if _, ok, err := (Union{none}).Authenticate(r); ok || err != nil {
		t.Errorf("none = %v %v", ok, err)
	}
}

func TestWithAuthenticatedGroup(t *testing.T) {
	orig := &request.User{Name: "a", Groups: make([]string, 1, 4)}
	got := WithAuthenticatedGroup(orig)
	if !slices.Equal(got.Groups, []string{"", GroupAuthenticated}) || len(orig.Groups) != 1 || orig.Groups[:2][1] != "" {
		t.Errorf("got %q, original %q", got.Groups, orig.Groups[:2])
	}
	if again := WithAuthenticatedGroup(got); len(again.Groups) != 2 {
		t.Errorf("added twice: %q", again.Groups)
	}
}

func equalUser(a, b *request.User) bool {
	return a.Name == b.Name && a.UID == b.UID && slices.Equal(a.Groups, b.Groups)
}
