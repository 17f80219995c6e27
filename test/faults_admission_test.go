package test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/restoregraph/restoregraph/restore"
	"github.com/restoregraph/restoregraph/test/harness"
)

// TestRestoreMeetsQuotaAndWebhook restores four namespaces of 300 ConfigMaps into a
// cluster that refuses some of them:
//   - a validating admission webhook denies every 30th ConfigMap of guarded-01, and does
//     not answer in time (the API server's 1 s) the first time it is asked for every
//     30th of guarded-02;
//   - a ResourceQuota lets guarded-03 hold 100 ConfigMaps.
//
// The denied and the over-quota objects fail, each named with the server's reason, and
// are not retried; the webhook's timeouts are retried until the webhook answers; the
// rest is restored. The command exits 1 (some objects failed).
func TestRestoreMeetsQuotaAndWebhook(t *testing.T) {
	const namespaces, perNamespace, quota = 4, 300, 100
	tarball := wideBackup(t, "guarded", namespaces, perNamespace)
	c := startCluster(t, harness.Options{Controllers: []string{"garbagecollector", "namespace", "resourcequota"}})
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)

	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guarded-03"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ResourceQuotas("guarded-03").Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "configmaps"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse(strconv.Itoa(quota))}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the quota controller has counted: admission enforces it
		q, err := cs.CoreV1().ResourceQuotas("guarded-03").Get(ctx, "configmaps", metav1.GetOptions{})
		return err == nil && q.Status.Hard != nil
	}, 30*time.Second, 100*time.Millisecond)

	wh := startWebhook(t, func(ns, name string, attempt int) (allowed bool, delay time.Duration) {
		j, _ := strconv.Atoi(strings.TrimPrefix(name, "cm-"))
		switch {
		case ns == "guarded-01" && j%30 == 0:
			return false, 0
		case ns == "guarded-02" && j%30 == 0 && attempt == 1:
			return true, 3 * time.Second
		}
		return true, 0
	})
	_, err = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, wh.configuration("guarded-01", "guarded-02"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { // the API server calls the webhook
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-00000", Namespace: "default"}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil && wh.asked("default/cm-00000") > 0
	}, 30*time.Second, 200*time.Millisecond)

	run := runCLI(t, "restore", "--backup", tarball, "--kubeconfig", c.Kubeconfig, "-o", "json",
		"--workers", "8", "--item-timeout", "2m")
	require.Equal(t, 1, run.exit, "some objects failed\n%s", tail(run.stderr, 4000))
	objects := run.report(t).byRef()
	restoredIn := map[string]int{}
	for j := range perNamespace {
		name := fmt.Sprintf("cm-%05d", j)
		for i := range namespaces {
			ns := fmt.Sprintf("guarded-%02d", i)
			o := objects[ns+"/"+name]
			switch {
			case i == 1 && j%30 == 0:
				assert.Equal(t, restore.Failed, o.Status, "%s/%s denied", ns, name)
				assert.Contains(t, o.Reason, `admission webhook "deny.restoregraph.test" denied the request: every 30th is not welcome`)
				assert.Zero(t, o.Retries, "a denial is not retried")
			case i == 2 && j%30 == 0:
				assert.Equal(t, restore.Restored, o.Status, "%s/%s: %s", ns, name, o.Reason)
				assert.Positive(t, o.Retries, "%s/%s: the webhook's timeout was retried", ns, name)
				assert.Equal(t, 2, wh.asked(ns+"/"+name), "asked again once it had not answered")
			case i == 3 && o.Status != restore.Restored:
				assert.Equal(t, restore.Failed, o.Status, "%s/%s", ns, name)
				assert.Contains(t, o.Reason, "exceeded quota: configmaps", "%s/%s", ns, name)
				assert.Zero(t, o.Retries, "over quota is not retried")
			default:
				assert.Equal(t, restore.Restored, o.Status, "%s/%s: %s", ns, name, o.Reason)
			}
			if o.Status == restore.Restored {
				restoredIn[ns]++
			}
		}
	}
	assert.Equal(t, quota, restoredIn["guarded-03"], "the quota's worth restored")
	for i := range namespaces {
		ns := fmt.Sprintf("guarded-%02d", i)
		seen := configMapsIn(t, c, ns)
		assert.Len(t, seen, restoredIn[ns], "%s holds what the report says was restored, once each", ns)
		for name := range seen {
			assert.Equal(t, restore.Restored, objects[ns+"/"+name].Status, "%s/%s", ns, name)
		}
	}
	t.Logf("exit 1 after %s: restored %v", run.took.Round(100*time.Millisecond), restoredIn)
}

// webhook is a validating admission webhook on loopback, over TLS of its own CA.
type webhook struct {
	url    string
	caPEM  []byte
	mu     sync.Mutex
	counts map[string]int // namespace/name → times asked
}

// startWebhook serves decide: whether to allow the object, and how long to wait first.
func startWebhook(t *testing.T, decide func(ns, name string, attempt int) (bool, time.Duration)) *webhook {
	t.Helper()
	cert, caPEM := selfSigned(t)
	wh := &webhook{caPEM: caPEM, counts: map[string]int{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		req := review.Request
		wh.mu.Lock()
		wh.counts[req.Namespace+"/"+req.Name]++
		attempt := wh.counts[req.Namespace+"/"+req.Name]
		wh.mu.Unlock()
		allowed, delay := decide(req.Namespace, req.Name, attempt)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: allowed}
		if !allowed {
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "every 30th is not welcome"}
		}
		review.Response, review.Request = resp, nil
		json.NewEncoder(w).Encode(review)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	wh.url = srv.URL + "/validate"
	return wh
}

func (wh *webhook) asked(ref string) int {
	wh.mu.Lock()
	defer wh.mu.Unlock()
	return wh.counts[ref]
}

// configuration calls the webhook for every ConfigMap made in the namespaces named (and
// in default, for the test's probe), with a 1 s timeout, failing closed.
func (wh *webhook) configuration(namespaces ...string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny.restoregraph.test"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "deny.restoregraph.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &wh.url, CABundle: wh.caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: append(namespaces, "default")}}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(1)),
		}},
	}
}

// selfSigned makes a certificate for 127.0.0.1, and its PEM as the CA bundle.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	require.NoError(t, err)
	return cert, certPEM
}
