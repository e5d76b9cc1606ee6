// The Kubernetes manifests' test (deploy/kubernetes): here, beside the
// commands it validates the manifests' args with, so that it adds no
// test binary of its own to the fast suite.
package cmd_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/idemcheck/idemcheck/cmd"
	"github.com/idemcheck/idemcheck/scenarios"
)

// image is the repository of the image the Dockerfile builds, without tag.
const image = "idemcheck"

// entrypoint is the Dockerfile's ENTRYPOINT: the containers' args start
// at the subcommand.
const entrypoint = `ENTRYPOINT ["/usr/local/bin/idemcheck"]`

// runKeyEnv is the environment variable every phase reads the run's key
// from (docs/distributed.md): on Kubernetes, from a Secret.
const runKeyEnv = "IDEMCHECK_RUN_KEY"

// kustomization is the part of a kustomization.yaml these manifests use;
// a field outside it is refused like an unknown field of a Kubernetes type.
type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Resources       []string `json:"resources"`
}

// set is the decoded manifests of one directory.
type set struct {
	files         []string // the YAML files, sorted
	kustomization *kustomization
	jobs          []*batchv1.Job
	configMaps    map[string]*corev1.ConfigMap
	claims        map[string]*corev1.PersistentVolumeClaim
}

// docSep separates the documents of a multi-document YAML file.
var docSep = regexp.MustCompile(`(?m)^---[ \t]*(#.*)?$`)

// decode decodes every document of every file strictly into its
// Kubernetes type, chosen by apiVersion and kind: an unknown kind, an
// unknown or duplicated field, or a field in the wrong case is an error,
// as the API server's strict field validation makes it.
func decode(files map[string][]byte) (*set, error) {
	s := &set{configMaps: map[string]*corev1.ConfigMap{}, claims: map[string]*corev1.PersistentVolumeClaim{}}
	for name := range files {
		s.files = append(s.files, name)
	}
	slices.Sort(s.files)
	var errs []error
	for _, name := range s.files {
		for i, doc := range docSep.Split(string(files[name]), -1) {
			if err := s.add([]byte(doc)); err != nil {
				errs = append(errs, fmt.Errorf("%s, document %d: %w", name, i+1, err))
			}
		}
	}
	return s, errors.Join(errs...)
}

func (s *set) add(doc []byte) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return nil // empty, or only comments
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return err
	}
	var obj any
	switch tm.APIVersion + " " + tm.Kind {
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	case "v1 ConfigMap":
		obj = &corev1.ConfigMap{}
	case "v1 PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "kustomize.config.k8s.io/v1beta1 Kustomization":
		obj = &kustomization{}
	default:
		return fmt.Errorf("unknown kind %q of apiVersion %q: want a batch/v1 Job, a v1 ConfigMap or PersistentVolumeClaim, or a Kustomization", tm.Kind, tm.APIVersion)
	}
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if err := errors.Join(strict...); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *batchv1.Job:
		s.jobs = append(s.jobs, o)
	case *corev1.ConfigMap:
		if s.configMaps[o.Name] != nil {
			return fmt.Errorf("a second ConfigMap %s", o.Name)
		}
		s.configMaps[o.Name] = o
	case *corev1.PersistentVolumeClaim:
		if s.claims[o.Name] != nil {
			return fmt.Errorf("a second PersistentVolumeClaim %s", o.Name)
		}
		s.claims[o.Name] = o
	case *kustomization:
		if s.kustomization != nil {
			return errors.New("a second Kustomization")
		}
		s.kustomization = o
	}
	return nil
}

// phases are the values of --phase, in the order they run.
var phases = []string{"prepare", "load", "judge"}

// check reports every problem of the decoded manifests at once: the
// Kubernetes side (Indexed load, no retries, non-root, resources, the
// shared volume) and the idemcheck side (valid commands that agree on the
// shard count and the run directory, a scenario that loads).
func (s *set) check(validate func([]string) error) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	if k := s.kustomization; k == nil {
		fail("no kustomization.yaml")
	} else {
		var want []string
		for _, f := range s.files {
			if f != "kustomization.yaml" {
				want = append(want, f)
			}
		}
		got := slices.Sorted(slices.Values(k.Resources))
		if !slices.Equal(got, want) {
			fail("kustomization.yaml resources = %v, want every other YAML file, %v", got, want)
		}
	}

	if len(s.claims) != 1 {
		fail("%d PersistentVolumeClaims, want 1 shared by every phase", len(s.claims))
	}
	var claim *corev1.PersistentVolumeClaim
	for _, c := range s.claims {
		claim = c
		if !slices.Contains(c.Spec.AccessModes, corev1.ReadWriteMany) {
			fail("PersistentVolumeClaim %s access modes %v: want ReadWriteMany, shards on several nodes write to it", c.Name, c.Spec.AccessModes)
		}
	}

	byPhase := map[string]*batchv1.Job{}
	outs := map[string]string{}
	keys := map[string]string{}
	for _, job := range s.jobs {
		phase, out := s.checkJob(job, claim, validate, fail)
		if phase == "" {
			continue
		}
		if ref := runKeyRef(job, fail); ref != "" {
			keys[phase] = ref
		}
		if other, ok := byPhase[phase]; ok {
			fail("Jobs %s and %s both run --phase %s", other.Name, job.Name, phase)
		}
		byPhase[phase] = job
		outs[phase] = out
	}
	for _, p := range phases {
		if byPhase[p] == nil {
			fail("no Job runs --phase %s", p)
		}
	}
	if outs["load"] != outs["prepare"] || outs["judge"] != outs["prepare"] {
		fail("--out prepare %q, load %q, judge %q: want one run directory", outs["prepare"], outs["load"], outs["judge"])
	}
	if keys["load"] != keys["prepare"] || keys["judge"] != keys["prepare"] {
		fail("%s from prepare %q, load %q, judge %q: want one Secret's key in every phase, the run's key", runKeyEnv, keys["prepare"], keys["load"], keys["judge"])
	}

	if prep, load := byPhase["prepare"], byPhase["load"]; prep != nil && load != nil {
		checkShards(prep, load, fail)
	}
	if prep := byPhase["prepare"]; prep != nil {
		s.checkScenario(prep, fail)
	}
	return errors.Join(errs...)
}

// checkJob checks one Job and returns its phase and run directory.
func (s *set) checkJob(job *batchv1.Job, claim *corev1.PersistentVolumeClaim, validate func([]string) error, fail func(string, ...any)) (phase, out string) {
	spec := job.Spec.Template.Spec
	if spec.RestartPolicy != corev1.RestartPolicyNever {
		fail("Job %s: restartPolicy %q, want Never", job.Name, spec.RestartPolicy)
	}
	if job.Spec.TTLSecondsAfterFinished == nil {
		fail("Job %s: no ttlSecondsAfterFinished", job.Name)
	}
	containers := append(slices.Clone(spec.InitContainers), spec.Containers...)
	if len(containers) != 1 {
		fail("Job %s: %d containers, want 1", job.Name, len(containers))
		return "", ""
	}
	c := containers[0]
	podNonRoot := spec.SecurityContext != nil && spec.SecurityContext.RunAsNonRoot != nil && *spec.SecurityContext.RunAsNonRoot
	if sc := c.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		podNonRoot = *sc.RunAsNonRoot
	}
	if !podNonRoot {
		fail("Job %s: not runAsNonRoot", job.Name)
	}
	if imageName(c.Image) != image {
		fail("Job %s: image %q, want [REGISTRY/]%s:TAG, built from the Dockerfile", job.Name, c.Image, image)
	}
	if len(c.Command) > 0 {
		fail("Job %s: command %q replaces the image's entrypoint; give the subcommand in args", job.Name, c.Command)
	}
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"requests", c.Resources.Requests}, {"limits", c.Resources.Limits}} {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := list.rl[r]; !ok || q.Cmp(resource.Quantity{}) <= 0 {
				fail("Job %s: no %s %s", job.Name, r, list.name)
			}
		}
	}
	if err := validate(c.Args); err != nil {
		fail("Job %s: idemcheck %s: %w", job.Name, strings.Join(c.Args, " "), err)
	}
	if len(c.Args) == 0 || c.Args[0] != "run" {
		fail("Job %s: args %q, want idemcheck run", job.Name, c.Args)
		return "", ""
	}
	phase, _ = flagValue(c.Args, "phase")
	if !slices.Contains(phases, phase) {
		fail("Job %s: --phase %q, want one of %v", job.Name, phase, phases)
		return "", ""
	}

	switch phase {
	case "load":
		// Indexed Jobs may bound retries per index instead.
		if !isZero(job.Spec.BackoffLimitPerIndex) && !isZero(job.Spec.BackoffLimit) {
			fail("Job %s: a failed shard is retried (backoffLimit %v, backoffLimitPerIndex %v): a retry resends the shard's ops; want backoffLimitPerIndex 0 or backoffLimit 0",
				job.Name, deref(job.Spec.BackoffLimit), deref(job.Spec.BackoffLimitPerIndex))
		}
	default:
		if !isZero(job.Spec.BackoffLimit) {
			fail("Job %s: backoffLimit %v, want 0: a second %s would not be the same run", job.Name, deref(job.Spec.BackoffLimit), phase)
		}
	}

	checkWrites(job, c, fail)
	out, ok := flagValue(c.Args, "out")
	if !ok {
		fail("Job %s: no --out", job.Name)
		return phase, ""
	}
	if claim == nil {
		return phase, out
	}
	mount, ok := mountOf(spec, c, func(v corev1.Volume) bool {
		return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name
	})
	if !ok {
		fail("Job %s: does not mount PersistentVolumeClaim %s", job.Name, claim.Name)
	} else if _, ok := under(out, mount.MountPath); !ok || mount.ReadOnly {
		fail("Job %s: --out %s is not under %s, where PersistentVolumeClaim %s is mounted writable", job.Name, out, mount.MountPath, claim.Name)
	}
	return phase, out
}

// runKeyRef checks that the Job's container gets the run key from a
// Secret, required (a phase without it would run unauthenticated, or be
// refused), and returns "SECRET/KEY", or "" after a failure.
func runKeyRef(job *batchv1.Job, fail func(string, ...any)) string {
	c := job.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name != runKeyEnv {
			continue
		}
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			fail("Job %s: %s is not read from a Secret (valueFrom.secretKeyRef): a run key written in a manifest is no secret", job.Name, runKeyEnv)
			return ""
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Optional != nil && *ref.Optional {
			fail("Job %s: %s from Secret %s is optional: without it the phase runs unauthenticated, or is refused", job.Name, runKeyEnv, ref.Name)
			return ""
		}
		return ref.Name + "/" + ref.Key
	}
	fail("Job %s: no %s from a Secret: the run's files on the volume would not be authenticated", job.Name, runKeyEnv)
	return ""
}

// checkShards checks that the load Job runs the shard count prepare wrote
// into the run's manifest, one Indexed pod per shard, all at once.
func checkShards(prep, load *batchv1.Job, fail func(string, ...any)) {
	prepArgs, loadArgs := prep.Spec.Template.Spec.Containers[0].Args, load.Spec.Template.Spec.Containers[0].Args
	spec := load.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion {
		fail("Job %s: completionMode %v, want Indexed", load.Name, deref(spec.CompletionMode))
	}
	v, _ := flagValue(prepArgs, "shards")
	shards, err := strconv.Atoi(v)
	if err != nil {
		fail("Job %s: --shards %q: want the shard count", prep.Name, v)
	}
	shard, _ := flagValue(loadArgs, "shard")
	nv, ok := strings.CutPrefix(shard, "auto/")
	n, err := strconv.Atoi(nv)
	if !ok || err != nil {
		fail("Job %s: --shard %q, want auto/N: the index comes from $JOB_COMPLETION_INDEX", load.Name, shard)
		return
	}
	if shards != n {
		fail("Job %s: --shard %s, but prepare's --shards is %d", load.Name, shard, shards)
	}
	if deref(spec.Completions) != int32(n) || deref(spec.Parallelism) != int32(n) {
		fail("Job %s: completions %v, parallelism %v, want both %d, the N of --shard %s", load.Name,
			deref(spec.Completions), deref(spec.Parallelism), n, shard)
	}
}

// checkScenario checks that prepare's scenario (the argument after run)
// is a key of a mounted ConfigMap and that the scenarios loader accepts it.
func (s *set) checkScenario(prep *batchv1.Job, fail func(string, ...any)) {
	spec := prep.Spec.Template.Spec
	c := spec.Containers[0]
	if len(c.Args) < 2 || strings.HasPrefix(c.Args[1], "-") {
		fail("Job %s: args %q: want the scenario file right after run", prep.Name, c.Args)
		return
	}
	file := c.Args[1]
	var mount corev1.VolumeMount
	var rel string
	found := false
	for _, m := range c.VolumeMounts {
		v, ok := volumeOf(spec, m.Name)
		if r, in := under(file, m.MountPath); ok && in && v.ConfigMap != nil {
			mount, rel, found = m, r, true
		}
	}
	if !found {
		fail("Job %s: scenario %s is not in a mounted ConfigMap", prep.Name, file)
		return
	}
	vol, _ := volumeOf(spec, mount.Name)
	cm := s.configMaps[vol.ConfigMap.Name]
	if cm == nil {
		fail("Job %s: mounts ConfigMap %s, which is not in the manifests", prep.Name, vol.ConfigMap.Name)
		return
	}
	key := rel
	if len(vol.ConfigMap.Items) > 0 {
		key = ""
		for _, it := range vol.ConfigMap.Items {
			if it.Path == rel {
				key = it.Key
			}
		}
	}
	data, ok := cm.Data[key]
	if !ok || key == "" {
		fail("Job %s: scenario %s: ConfigMap %s mounted at %s has no key for %s (keys: %v)", prep.Name, file, cm.Name, mount.MountPath, rel, slices.Sorted(maps.Keys(cm.Data)))
		return
	}
	if _, err := scenarios.Parse("configmap/"+cm.Name+"/"+key, []byte(data)); err != nil {
		fail("ConfigMap %s: scenario %s: %w", cm.Name, key, err)
	}
}

// checkWrites checks that every place the container's idemcheck writes
// is on a writable volume when its root file system is read-only: --out,
// --tmp-dir, each --report file and $TMPDIR (/tmp unless set).
func checkWrites(job *batchv1.Job, c corev1.Container, fail func(string, ...any)) {
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		return
	}
	spec := job.Spec.Template.Spec
	tmp := "/tmp"
	for _, e := range c.Env {
		if e.Name == "TMPDIR" {
			tmp = e.Value
		}
	}
	places := map[string]string{"$TMPDIR": tmp}
	for _, name := range []string{"out", "tmp-dir"} {
		if v, ok := flagValue(c.Args, name); ok {
			places["--"+name] = v
		}
	}
	for i, a := range c.Args {
		spec, ok := strings.CutPrefix(a, "--report=")
		if !ok && a == "--report" && i+1 < len(c.Args) {
			spec, ok = c.Args[i+1], true
		}
		if _, file, found := strings.Cut(spec, "="); ok && found {
			places["--report "+spec] = path.Dir(file)
		}
	}
	for what, dir := range places {
		writable := false
		for _, m := range c.VolumeMounts {
			v, found := volumeOf(spec, m.Name)
			if !found || m.ReadOnly || v.EmptyDir == nil && v.PersistentVolumeClaim == nil {
				continue
			}
			if _, in := under(dir, m.MountPath); in || path.Clean(dir) == path.Clean(m.MountPath) {
				writable = true
			}
		}
		if !writable {
			fail("Job %s: %s writes in %s, which no writable volume holds (readOnlyRootFilesystem: true); mount an emptyDir or the run's volume there", job.Name, what, dir)
		}
	}
}

// mountOf returns the container's mount of the first volume that ok
// accepts.
func mountOf(spec corev1.PodSpec, c corev1.Container, ok func(corev1.Volume) bool) (corev1.VolumeMount, bool) {
	for _, m := range c.VolumeMounts {
		if v, found := volumeOf(spec, m.Name); found && ok(v) {
			return m, true
		}
	}
	return corev1.VolumeMount{}, false
}

func volumeOf(spec corev1.PodSpec, name string) (corev1.Volume, bool) {
	for _, v := range spec.Volumes {
		if v.Name == name {
			return v, true
		}
	}
	return corev1.Volume{}, false
}

// under returns p relative to dir when p is strictly inside dir.
func under(p, dir string) (string, bool) {
	p, dir = path.Clean(p), path.Clean(dir)
	rel, ok := strings.CutPrefix(p, dir+"/")
	if dir == "/" {
		rel, ok = strings.CutPrefix(p, "/")
	}
	return rel, ok && rel != "" && path.IsAbs(p)
}

// flagValue returns the value of --name in args, written --name=value or
// --name value.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

// imageName is the last path element of an image reference, without its
// tag or digest: idemcheck for registry.example.com:5000/team/idemcheck:v1.
func imageName(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	ref = path.Base(ref)
	ref, _, _ = strings.Cut(ref, ":")
	return ref
}

func isZero(p *int32) bool { return p != nil && *p == 0 }

// deref is *p, or the zero value (printed as such) when p is nil.
func deref[T any](p *T) any {
	if p == nil {
		return "unset"
	}
	return *p
}

// manifestsDir is where the manifests are, from this package's directory.
var manifestsDir = filepath.Join("..", "deploy", "kubernetes")

// readManifests returns every *.yaml file of manifestsDir by name.
func readManifests(t *testing.T) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(manifestsDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("no *.yaml manifests in %s", manifestsDir)
	}
	files := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(n)] = b
	}
	return files
}

func decodeAndCheck(files map[string][]byte) error {
	s, err := decode(files)
	if err != nil {
		return err
	}
	return s.check(cmd.Validate)
}

func TestManifests(t *testing.T) {
	if err := decodeAndCheck(readManifests(t)); err != nil {
		t.Errorf("the manifests in deploy/kubernetes:\n%v", err)
	}
}

// TestDockerfileEntrypoint checks what the manifests' args assume: the
// image's entrypoint is the binary, and it runs as a non-root user.
func TestDockerfileEntrypoint(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if !slices.Contains(lines, entrypoint) || !slices.Contains(lines, "USER nonroot:nonroot") {
		t.Errorf("Dockerfile: want the lines %s and USER nonroot:nonroot, which the manifests' args and runAsNonRoot assume", entrypoint)
	}
}

// TestManifestsOneFile checks that multi-document files are split: the
// same manifests in one file still pass.
func TestManifestsOneFile(t *testing.T) {
	files := readManifests(t)
	var all []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if name != "kustomization.yaml" {
			all = append(all, string(files[name]))
		}
	}
	one := map[string][]byte{
		"all.yaml": []byte(strings.Join(all, "\n---\n")),
		"kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\n" +
			"kind: Kustomization\nresources: [all.yaml]\n"),
	}
	if err := decodeAndCheck(one); err != nil {
		t.Errorf("the manifests as one multi-document file:\n%v", err)
	}
}

// TestBrokenManifests proves the checks can fail: each case breaks the
// real manifests in one place, and the result must be refused.
func TestBrokenManifests(t *testing.T) {
	tests := []struct {
		name, file, old, new string
	}{
		{"unknown field", "load.yaml", "\n  backoffLimitPerIndex: 0\n", "\n  backoffLimitPerIndx: 0\n"},
		{"field in the wrong case", "prepare.yaml", "\n  backoffLimit: 0\n", "\n  BackoffLimit: 0\n"},
		{"duplicate field", "judge.yaml", "\n  backoffLimit: 0\n", "\n  backoffLimit: 0\n  backoffLimit: 1\n"},
		{"unknown kind", "pvc.yaml", "kind: PersistentVolumeClaim", "kind: PersistentVolume"},
		{"unknown kind in a second document", "pvc.yaml", "      storage: 1Gi\n", "      storage: 1Gi\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: x\n"},
		{"completions != N", "load.yaml", "completions: 4", "completions: 3"},
		{"parallelism != N", "load.yaml", "parallelism: 4", "parallelism: 2"},
		{"not Indexed", "load.yaml", "completionMode: Indexed", "completionMode: NonIndexed"},
		{"a fixed shard index", "load.yaml", "--shard=auto/4", "--shard=0/4"},
		{"shards != N", "prepare.yaml", "--shards=4", "--shards=8"},
		{"a bad flag", "judge.yaml", "--wait=10m", "--wiat=10m"},
		{"a bad flag value", "judge.yaml", "--format=text", "--format=yaml"},
		{"a bad phase", "load.yaml", "--phase=load", "--phase=lode"},
		{"a load shard retried", "load.yaml", "\n  backoffLimitPerIndex: 0\n", "\n  backoffLimitPerIndex: 1\n"},
		{"prepare retried", "prepare.yaml", "\n  backoffLimit: 0\n", "\n  backoffLimit: 6\n"},
		{"restarted in place", "judge.yaml", "restartPolicy: Never", "restartPolicy: OnFailure"},
		{"root", "load.yaml", "runAsNonRoot: true", "runAsNonRoot: false"},
		{"no ttl", "judge.yaml", "\n  ttlSecondsAfterFinished: 86400\n", "\n"},
		{"no memory limit", "load.yaml", "              memory: 1Gi\n", ""},
		{"another image", "judge.yaml", "image: idemcheck:latest", "image: registry.example.com:5000/team/idemcheck-lab:v1"},
		{"entrypoint replaced", "load.yaml", "          args:\n", "          command: [/usr/local/bin/idemcheck]\n          args:\n"},
		{"another run directory", "judge.yaml", "--out=/runs/charges-run-1", "--out=/runs/charges-run-2"},
		{"run directory off the volume", "judge.yaml", "mountPath: /runs", "mountPath: /data"},
		{"volume not ReadWriteMany", "pvc.yaml", "[ReadWriteMany]", "[ReadWriteOnce]"},
		{"scenario not in the ConfigMap", "prepare.yaml", "- /scenarios/charges.yaml", "- /scenarios/refunds.yaml"},
		{"scenario not mounted", "prepare.yaml", "- /scenarios/charges.yaml", "- /runs/charges.yaml"},
		{"scenario that does not load", "scenario.yaml", "    retry:\n", "    retires:\n"},
		{"file missing from the kustomization", "kustomization.yaml", "  - judge.yaml\n", ""},
		{"no run key in the load", "load.yaml", "            - name: IDEMCHECK_RUN_KEY\n", "            - name: IDEMCHECK_RUN_KE\n"},
		{"a run key written in the manifest", "prepare.yaml", "              valueFrom:\n                secretKeyRef:\n                  name: idemcheck-run-key\n                  key: IDEMCHECK_RUN_KEY\n", "              value: not-a-secret-0123456789\n"},
		{"an optional run key", "judge.yaml", "                  key: IDEMCHECK_RUN_KEY\n", "                  key: IDEMCHECK_RUN_KEY\n                  optional: true\n"},
		{"another run key in the judge", "judge.yaml", "name: idemcheck-run-key", "name: idemcheck-other-key"},
		{"no writable /tmp", "load.yaml", "            - name: tmp\n              mountPath: /tmp\n", ""},
		{"a read-only /tmp", "prepare.yaml", "              mountPath: /tmp\n", "              mountPath: /tmp\n              readOnly: true\n"},
		{"a report off the volume", "judge.yaml", "--report=junit=/runs/charges-run-1/junit.xml", "--report=junit=/reports/junit.xml"},
		{"temporary files off the volume", "load.yaml", "            - --out=/runs/charges-run-1\n", "            - --out=/runs/charges-run-1\n            - --tmp-dir=/scratch\n"},
	}
	if err := decodeAndCheck(readManifests(t)); err != nil {
		t.Fatalf("the manifests fail before any change, so no case below proves anything:\n%v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := readManifests(t)
			src := string(files[tt.file])
			if !strings.Contains(src, tt.old) {
				t.Fatalf("%s has no %q to break: update the case", tt.file, tt.old)
			}
			files[tt.file] = []byte(strings.Replace(src, tt.old, tt.new, 1))
			err := decodeAndCheck(files)
			if err == nil {
				t.Fatalf("decodeAndCheck(%s with %q as %q) = nil, want an error", tt.file, tt.old, tt.new)
			}
			t.Logf("refused: %v", err)
		})
	}
}
