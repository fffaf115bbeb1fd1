/*
 * scikit-learn's decision trees (BestSplitter, DepthFirstTreeBuilder, entropy criterion), grown
 * faster: the very trees DecisionTreeClassifier(criterion="entropy", max_depth, max_features,
 * random_state).fit grows on finite float32 rows without weights, node for node and bit for bit.
 *
 * What is scikit-learn's (re-implemented here from the description of its algorithm, version
 * 1.9): the depth-first order of the nodes, the feature draws (Fisher-Yates over a features array
 * kept from node to node, with the constant-feature bookkeeping, on sklearn's xorshift rand_r
 * seeded by RandomState(seed).randint(0, 2**31 - 1)), the scan of candidate splits in increasing
 * order of the feature with values closer than 1e-7 (float32) taken as equal, the first strict
 * maximum of the proxy improvement, the threshold as the sum of the two values' halves, and every
 * floating-point formula in the same order of operations.
 *
 * What is faster: scikit-learn sorts the node's samples by every feature it tries. Class counts
 * are integers (exact in doubles) and a split depends only on the class counts on either side of
 * each distinct value, so a column whose values are small integers (0..255: counts, degrees,
 * histogram bins) is scanned from a per-node histogram of (value, class) counts instead, and any
 * other column from a radix sort of packed (value, class) keys. Same counts, same formulas, same
 * bits; tests/test_tree_builder.py compares the trees node for node with scikit-learn's.
 *
 * And fewer logarithms: a cut between two adjacent groups of equal values that are both pure and
 * of the same class is never scikit-learn's choice, so its proxy is not computed. Along a run of
 * such groups the children's weighted entropy, as a function of the number of samples moved left,
 * is strictly concave (its second derivative is at most -1/n^2 nats on a node of n samples, since
 * the node is impure), so every cut inside the run is worse than the better end of the run (a
 * boundary cut, or the node's edge, which is worse than any cut) by at least 0.72/n^2 bits: Fayyad
 * & Irani's boundary-point theorem (1992) with a margin. The proxies differ from their exact
 * values by about 1e-15 n, so for n <= 32,768 (2e-9 against 4e-11) the skipped cut would not have
 * been the first strict maximum either. Larger nodes evaluate every cut.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define RAND_R_MAX 2147483647u
#define DEFAULT_SEED 1u
#define TREE_LEAF (-1)
#define TREE_UNDEFINED (-2)
#define SMALL_INT_MAX 255
/* Histogram copies filled in turn: consecutive increments of one bin would each wait for the
 * last (a store-to-load dependency); four banks let four proceed at once. */
#define HIST_BANKS 4
#define MAX_CLASSES 255
/* Largest node whose cuts inside a run of pure same-class groups are skipped (see scan_feature). */
#define SKIP_MAX_SAMPLES 32768

static const float FEATURE_THRESHOLD = 1e-7f;

/* sklearn.utils._random.our_rand_r and sklearn.tree._utils.rand_int */
static inline uint32_t our_rand_r(uint32_t *seed)
{
    if (*seed == 0) {
        *seed = DEFAULT_SEED;
    }
    *seed ^= (uint32_t)(*seed << 13);
    *seed ^= (uint32_t)(*seed >> 17);
    *seed ^= (uint32_t)(*seed << 5);
    return *seed % (RAND_R_MAX + 1u);
}

static inline int64_t rand_int(int64_t low, int64_t high, uint32_t *state)
{
    return low + (int64_t)our_rand_r(state) % (high - low);
}

/* sklearn.tree._utils.log: the base-2 logarithm as ln(x) / ln(2) */
static inline double log2_sk(double x)
{
    return log(x) / log(2.0);
}

/* Entropy.node_impurity of the counts (one output). */
static double entropy(const double *counts, int n_classes, double total)
{
    double value = 0.0;
    for (int c = 0; c < n_classes; c++) {
        double count_k = counts[c];
        if (count_k > 0.0) {
            count_k /= total;
            value -= count_k * log2_sk(count_k);
        }
    }
    return value / 1.0;
}

/* Entropy.children_impurity: left and right accumulated in one loop over the classes. */
static void children_entropy(const double *left, const double *right, int n_classes,
                             double w_left, double w_right, double *imp_left, double *imp_right)
{
    double entropy_left = 0.0, entropy_right = 0.0;
    for (int c = 0; c < n_classes; c++) {
        double count_k = left[c];
        if (count_k > 0.0) {
            count_k /= w_left;
            entropy_left -= count_k * log2_sk(count_k);
        }
        count_k = right[c];
        if (count_k > 0.0) {
            count_k /= w_right;
            entropy_right -= count_k * log2_sk(count_k);
        }
    }
    *imp_left = entropy_left / 1.0;
    *imp_right = entropy_right / 1.0;
}

typedef struct {
    int64_t start, end, depth, parent, is_left, n_constant_features;
    double impurity;
} StackRecord;

typedef struct {
    int64_t pos, feature;
    double threshold, proxy;
    int missing_go_to_left;
} Split;

typedef struct {
    /* inputs */
    int64_t n, n_features, n_classes, max_depth, max_features;
    const float *columns;   /* column-major copy of the rows: columns[f * n + i] */
    const uint16_t *codes;  /* small-integer columns: value * n_classes + class, [f * n + i] */
    const uint8_t *small;   /* small[f]: column f holds integers 0..255 */
    const uint8_t *y;       /* class code of each row */
    uint32_t rand_state;
    /* working memory */
    int32_t *samples;
    int64_t *features, *constant_features;
    int32_t *hist;          /* HIST_BANKS banks of (SMALL_INT_MAX + 1) * n_classes counts */
    double *counts;         /* class counts of the nodes on the stack, n_classes each */
    uint64_t *keys, *keys_tmp;
    int32_t *group_class;
    int64_t *group_end;
    double *total, *left, *right, *row;
    /* outputs */
    int64_t capacity, node_count, max_depth_seen;
    int64_t *left_child, *right_child, *feature;
    double *threshold, *impurity, *weighted_n_node_samples, *value;
    int64_t *n_node_samples;
    uint8_t *missing_go_to_left;
} Builder;

/* float32 bits mapped to unsigned integers in the order of the values (finite values). */
static inline uint32_t float_order(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

static inline float order_float(uint32_t key)
{
    uint32_t bits = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* LSD radix sort of 40-bit keys (value order << 8 | class), 8 bits a pass. */
static void radix_sort(uint64_t *keys, uint64_t *tmp, int64_t n)
{
    if (n < 32) {
        for (int64_t i = 1; i < n; i++) {
            uint64_t k = keys[i];
            int64_t j = i - 1;
            while (j >= 0 && keys[j] > k) {
                keys[j + 1] = keys[j];
                j--;
            }
            keys[j + 1] = k;
        }
        return;
    }
    int64_t count[256];
    uint64_t *src = keys, *dst = tmp;
    for (int shift = 0; shift < 40; shift += 8) {
        memset(count, 0, sizeof count);
        for (int64_t i = 0; i < n; i++) {
            count[(src[i] >> shift) & 0xff]++;
        }
        if (count[(src[0] >> shift) & 0xff] == n) {
            continue; /* one digit value: this pass would not move anything */
        }
        int64_t sum = 0;
        for (int b = 0; b < 256; b++) {
            int64_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (int64_t i = 0; i < n; i++) {
            dst[count[(src[i] >> shift) & 0xff]++] = src[i];
        }
        uint64_t *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != keys) {
        memcpy(keys, src, (size_t)n * sizeof *keys);
    }
}

/* A candidate split with `n_left` samples whose class counts are b->left: BestSplitter's
 * proxy improvement, kept when strictly larger than the best so far. */
static inline void consider(Builder *b, Split *best, int64_t start, int64_t end, int64_t n_left,
                            int64_t feature, float below, float above)
{
    int nc = (int)b->n_classes;
    double w_left = (double)n_left, w_right = (double)(end - start) - w_left;
    for (int c = 0; c < nc; c++) {
        b->right[c] = b->total[c] - b->left[c];
    }
    double imp_left, imp_right;
    children_entropy(b->left, b->right, nc, w_left, w_right, &imp_left, &imp_right);
    double proxy = -w_right * imp_right - w_left * imp_left;
    if (proxy > best->proxy) {
        best->proxy = proxy;
        best->pos = start + n_left;
        best->feature = feature;
        best->threshold = (double)below / 2.0 + (double)above / 2.0;
        best->missing_go_to_left = n_left > (end - start) - n_left;
    }
}

/* Scan feature f on samples[start:end]; returns 1 when it is constant there (max <= min +
 * 1e-7 in float32), else updates `best` with its splits and returns 0. */
static int scan_feature(Builder *b, int64_t f, int64_t start, int64_t end, Split *best)
{
    int nc = (int)b->n_classes;
    const int32_t *samples = b->samples;
    memset(b->left, 0, (size_t)nc * sizeof(double));
    if (b->small[f]) {
        const uint16_t *col = b->codes + f * b->n;
        int32_t *h0 = b->hist;
        int64_t bank = (int64_t)(SMALL_INT_MAX + 1) * nc;
        int32_t *h1 = h0 + bank, *h2 = h1 + bank, *h3 = h2 + bank;
        int lo = INT32_MAX, hi = -1;
        int64_t p = start;
        for (; p + 4 <= end; p += 4) {
            int k0 = col[samples[p]], k1 = col[samples[p + 1]];
            int k2 = col[samples[p + 2]], k3 = col[samples[p + 3]];
            h0[k0]++;
            h1[k1]++;
            h2[k2]++;
            h3[k3]++;
            int a = k0 < k1 ? k0 : k1, c = k2 < k3 ? k2 : k3;
            int a2 = k0 < k1 ? k1 : k0, c2 = k2 < k3 ? k3 : k2;
            a = a < c ? a : c;
            a2 = a2 < c2 ? c2 : a2;
            lo = a < lo ? a : lo;
            hi = a2 > hi ? a2 : hi;
        }
        for (; p < end; p++) {
            int k = col[samples[p]];
            h0[k]++;
            lo = k < lo ? k : lo;
            hi = k > hi ? k : hi;
        }
        lo /= nc; /* from keys to values */
        hi /= nc;
        int constant = (float)hi <= (float)lo + FEATURE_THRESHOLD;
        int skip = end - start <= SKIP_MAX_SAMPLES;
        int64_t n_left = 0;
        int prev = -1, prev_class = -1; /* prev_class: the previous group's class if pure */
        for (int v = lo; v <= hi; v++) {
            int64_t here = 0;
            int pure_class = -1;
            for (int c = 0; c < nc; c++) {
                int64_t k = (int64_t)v * nc + c;
                int64_t row = (int64_t)h0[k] + h1[k] + h2[k] + h3[k];
                h0[k] = h1[k] = h2[k] = h3[k] = 0;
                b->row[c] = (double)row;
                if (row) pure_class = here ? -1 : c;
                here += row;
            }
            if (here == 0 || constant) continue; /* a constant column: only clear the banks */
            /* integer values are more than 1e-7 apart: every present value is its own group */
            if (prev >= 0 && (float)v > (float)prev + FEATURE_THRESHOLD &&
                !(skip && pure_class >= 0 && pure_class == prev_class)) {
                consider(b, best, start, end, n_left, f, (float)prev, (float)v);
            }
            for (int c = 0; c < nc; c++) {
                b->left[c] += b->row[c];
            }
            n_left += here;
            prev = v;
            prev_class = pure_class;
        }
        return constant;
    }
    const float *col = b->columns + f * b->n;
    int64_t m = end - start;
    uint64_t *keys = b->keys;
    for (int64_t p = 0; p < m; p++) {
        int32_t i = samples[start + p];
        keys[p] = ((uint64_t)float_order(col[i]) << 8) | b->y[i];
    }
    radix_sort(keys, b->keys_tmp, m);
    float first = order_float((uint32_t)(keys[0] >> 8));
    float last = order_float((uint32_t)(keys[m - 1] >> 8));
    if (last <= first + FEATURE_THRESHOLD) {
        return 1;
    }
    /* Groups: runs of sorted values each within 1e-7 of the one before (scikit-learn's ties).
     * group_class[g]: the class of group g if it is pure, else -1; group_end[g]: one past it. */
    int32_t *group_class = b->group_class;
    int64_t *group_end = b->group_end;
    int64_t n_groups = 0;
    float prev = first;
    int cls = (int)(keys[0] & 0xff);
    for (int64_t p = 1; p < m; p++) {
        float x = order_float((uint32_t)(keys[p] >> 8));
        int c = (int)(keys[p] & 0xff);
        if (x > prev + FEATURE_THRESHOLD) {
            group_class[n_groups] = cls;
            group_end[n_groups++] = p;
            cls = c;
        } else if (c != cls) {
            cls = -1;
        }
        prev = x;
    }
    group_class[n_groups] = cls;
    group_end[n_groups++] = m;
    int skip = m <= SKIP_MAX_SAMPLES;
    int64_t p = 0;
    for (int64_t g = 0; g + 1 < n_groups; g++) {
        for (; p < group_end[g]; p++) {
            b->left[keys[p] & 0xff] += 1.0;
        }
        if (skip && group_class[g] >= 0 && group_class[g] == group_class[g + 1]) {
            continue;
        }
        consider(b, best, start, end, p, f, order_float((uint32_t)(keys[p - 1] >> 8)),
                 order_float((uint32_t)(keys[p] >> 8)));
    }
    return 0;
}

static inline void swap64(int64_t *a, int64_t i, int64_t j)
{
    int64_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

/* node_split_best: the feature draws and constant-feature bookkeeping of scikit-learn's
 * BestSplitter, then the partition of samples[start:end] at the best split. */
static void node_split(Builder *b, int64_t start, int64_t end, double impurity,
                       int64_t *n_constant_features, Split *best, double *imp_left,
                       double *imp_right, double *improvement)
{
    int64_t *features = b->features, *constant_features = b->constant_features;
    int64_t f_i = b->n_features, f_j;
    int64_t n_visited = 0, n_found = 0, n_drawn = 0;
    int64_t n_known = *n_constant_features, n_total = n_known;
    best->pos = end;
    best->feature = 0;
    best->threshold = 0.0;
    best->proxy = -INFINITY;
    best->missing_go_to_left = 0;
    *imp_left = INFINITY;
    *imp_right = INFINITY;
    *improvement = -INFINITY;
    while (f_i > n_total && (n_visited < b->max_features || n_visited <= n_found + n_drawn)) {
        n_visited++;
        f_j = rand_int(n_drawn, f_i - n_found, &b->rand_state);
        if (f_j < n_known) {
            swap64(features, n_drawn, f_j);
            n_drawn++;
            continue;
        }
        f_j += n_found;
        if (scan_feature(b, features[f_j], start, end, best)) {
            swap64(features, f_j, n_total);
            n_found++;
            n_total++;
            continue;
        }
        f_i--;
        swap64(features, f_i, f_j);
    }
    if (best->pos < end) {
        /* partition_samples_final: value <= threshold to the left */
        const float *col = b->columns + best->feature * b->n;
        const uint16_t *codes = b->codes + best->feature * b->n;
        int small = b->small[best->feature], nc = (int)b->n_classes;
        int32_t *samples = b->samples;
        int64_t p = start, q = end;
        while (p < q) {
            int32_t i = samples[p];
            double x = small ? (double)(codes[i] / nc) : (double)col[i];
            if (x <= best->threshold) {
                p++;
            } else {
                q--;
                int32_t t = samples[p];
                samples[p] = samples[q];
                samples[q] = t;
            }
        }
        memset(b->left, 0, (size_t)nc * sizeof(double));
        for (int64_t k = start; k < best->pos; k++) {
            b->left[b->y[samples[k]]] += 1.0;
        }
        for (int c = 0; c < nc; c++) {
            b->right[c] = b->total[c] - b->left[c];
        }
        double w_node = (double)(end - start), w_left = (double)(best->pos - start);
        double w_right = w_node - w_left;
        children_entropy(b->left, b->right, nc, w_left, w_right, imp_left, imp_right);
        *improvement = (w_node / (double)b->n) *
                       (impurity - (w_right / w_node * *imp_right) - (w_left / w_node * *imp_left));
    }
    memcpy(features, constant_features, (size_t)n_known * sizeof *features);
    memcpy(constant_features + n_known, features + n_known, (size_t)n_found * sizeof *features);
    *n_constant_features = n_total;
}

/* DepthFirstTreeBuilder.build with min_samples_split 2, min_samples_leaf 1, no weights and
 * min_impurity_decrease 0. Returns 0, or -1 when the node arrays are too small. */
static int build(Builder *b)
{
    int nc = (int)b->n_classes;
    StackRecord *stack = malloc((size_t)(2 * b->n + 2) * sizeof *stack);
    if (stack == NULL) return -2;
    double *counts = b->counts; /* counts + slot * nc: the class counts of stack[slot] */
    int64_t top = 0;
    int first = 1, rc = 0;
    b->node_count = 0;
    b->max_depth_seen = -1;
    memset(counts, 0, (size_t)nc * sizeof(double));
    for (int64_t p = 0; p < b->n; p++) {
        counts[b->y[b->samples[p]]] += 1.0;
    }
    stack[top++] = (StackRecord){0, b->n, 0, TREE_UNDEFINED, 0, 0, INFINITY};
    while (top > 0) {
        StackRecord r = stack[--top];
        int64_t n_node = r.end - r.start;
        /* the node's class counts: its parent's split counted them, exactly as a recount */
        memcpy(b->total, counts + top * nc, (size_t)nc * sizeof(double));
        double weighted = (double)n_node;
        int is_leaf = r.depth >= b->max_depth || n_node < 2;
        double impurity = r.impurity;
        if (first) {
            impurity = entropy(b->total, nc, weighted);
            first = 0;
        }
        is_leaf = is_leaf || impurity <= DBL_EPSILON;
        Split split = {0};
        double imp_left = INFINITY, imp_right = INFINITY, improvement = -INFINITY;
        int64_t n_constant = r.n_constant_features;
        if (!is_leaf) {
            node_split(b, r.start, r.end, impurity, &n_constant, &split, &imp_left, &imp_right,
                       &improvement);
            is_leaf = split.pos >= r.end || improvement + DBL_EPSILON < 0.0;
        }
        int64_t id = b->node_count;
        if (id >= b->capacity) {
            rc = -1;
            break;
        }
        if (r.parent != TREE_UNDEFINED) {
            if (r.is_left) b->left_child[r.parent] = id;
            else b->right_child[r.parent] = id;
        }
        b->impurity[id] = impurity;
        b->n_node_samples[id] = n_node;
        b->weighted_n_node_samples[id] = weighted;
        if (is_leaf) {
            b->left_child[id] = TREE_LEAF;
            b->right_child[id] = TREE_LEAF;
            b->feature[id] = TREE_UNDEFINED;
            b->threshold[id] = TREE_UNDEFINED;
            b->missing_go_to_left[id] = 0;
        } else {
            b->feature[id] = split.feature;
            b->threshold[id] = split.threshold;
            b->missing_go_to_left[id] = (uint8_t)split.missing_go_to_left;
        }
        for (int c = 0; c < nc; c++) {
            b->value[id * nc + c] = b->total[c] / weighted;
        }
        b->node_count++;
        if (!is_leaf) {
            memcpy(counts + top * nc, b->right, (size_t)nc * sizeof(double));
            stack[top++] = (StackRecord){split.pos, r.end, r.depth + 1, id, 0, n_constant,
                                         imp_right};
            memcpy(counts + top * nc, b->left, (size_t)nc * sizeof(double));
            stack[top++] = (StackRecord){r.start, split.pos, r.depth + 1, id, 1, n_constant,
                                         imp_left};
        }
        if (r.depth > b->max_depth_seen) b->max_depth_seen = r.depth;
    }
    free(stack);
    return rc;
}

static int get_buffer(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize,
                      Py_ssize_t length, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        return -1;
    }
    if (view->itemsize != itemsize || view->len != itemsize * length) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd items of %zd bytes", name, length,
                     itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(grow_doc,
"grow(rows, y, n_classes, max_depth, max_features, rand_state, left_child, right_child,\n"
"     feature, threshold, impurity, n_node_samples, weighted_n_node_samples,\n"
"     missing_go_to_left, value) -> (node_count, max_depth)\n\n"
"Grow scikit-learn's entropy tree on `rows` (float32, n x n_features, C order, finite) and\n"
"`y` (uint8 class codes < n_classes) into the node arrays (int64, float64, uint8; value is\n"
"capacity x n_classes). `rand_state` is the splitter's rand_r state. Raises ValueError when\n"
"the arrays are too small for the tree.");

static PyObject *grow(PyObject *self, PyObject *args)
{
    PyObject *o_rows, *o_y, *o_out[9];
    long long n_classes, max_depth, max_features;
    unsigned long rand_state;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOLLLkOOOOOOOOO", &o_rows, &o_y, &n_classes, &max_depth,
                          &max_features, &rand_state, &o_out[0], &o_out[1], &o_out[2],
                          &o_out[3], &o_out[4], &o_out[5], &o_out[6], &o_out[7], &o_out[8])) {
        return NULL;
    }
    if (n_classes < 1 || n_classes > MAX_CLASSES || max_features < 1 || max_depth < 0) {
        PyErr_SetString(PyExc_ValueError, "grow: need 1 <= n_classes <= 255, max_features >= 1, "
                        "max_depth >= 0");
        return NULL;
    }
    Py_buffer v_rows, v_y, v_out[9];
    if (PyObject_GetBuffer(o_rows, &v_rows, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_ND) < 0) {
        return NULL;
    }
    if (v_rows.ndim != 2 || v_rows.itemsize != 4 || strcmp(v_rows.format, "f") != 0 ||
        v_rows.shape[0] < 1 || v_rows.shape[1] < 1) {
        PyErr_SetString(PyExc_ValueError, "grow: rows must be a non-empty 2-d float32 array");
        PyBuffer_Release(&v_rows);
        return NULL;
    }
    Py_ssize_t n = v_rows.shape[0], n_features = v_rows.shape[1];
    if (n > INT32_MAX / 2) {
        PyErr_SetString(PyExc_ValueError, "grow: at most 2**30 rows (samples are int32)");
        PyBuffer_Release(&v_rows);
        return NULL;
    }
    if (get_buffer(o_y, &v_y, 0, 1, n, "y") < 0) {
        PyBuffer_Release(&v_rows);
        return NULL;
    }
    Py_buffer probe;
    if (PyObject_GetBuffer(o_out[0], &probe, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&v_rows);
        PyBuffer_Release(&v_y);
        return NULL;
    }
    Py_ssize_t capacity = probe.len / 8;
    PyBuffer_Release(&probe);
    static const Py_ssize_t sizes[9] = {8, 8, 8, 8, 8, 8, 8, 1, 8};
    static const char *names[9] = {"left_child", "right_child", "feature", "threshold",
                                   "impurity", "n_node_samples", "weighted_n_node_samples",
                                   "missing_go_to_left", "value"};
    int got = 0;
    for (; got < 9; got++) {
        Py_ssize_t length = got == 8 ? capacity * (Py_ssize_t)n_classes : capacity;
        if (get_buffer(o_out[got], &v_out[got], 1, sizes[got], length, names[got]) < 0) break;
    }
    PyObject *result = NULL;
    Builder b = {0};
    if (got < 9) goto done;
    const float *rows = v_rows.buf;
    const uint8_t *y = v_y.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (y[i] >= n_classes) {
            PyErr_SetString(PyExc_ValueError, "grow: a class code is >= n_classes");
            goto done;
        }
    }
    b.n = n;
    b.n_features = n_features;
    b.n_classes = n_classes;
    b.max_depth = max_depth;
    b.max_features = max_features;
    b.rand_state = (uint32_t)rand_state;
    b.y = y;
    b.capacity = capacity;
    b.left_child = v_out[0].buf;
    b.right_child = v_out[1].buf;
    b.feature = v_out[2].buf;
    b.threshold = v_out[3].buf;
    b.impurity = v_out[4].buf;
    b.n_node_samples = v_out[5].buf;
    b.weighted_n_node_samples = v_out[6].buf;
    b.missing_go_to_left = v_out[7].buf;
    b.value = v_out[8].buf;
    float *columns = malloc((size_t)(n * n_features) * sizeof(float));
    uint16_t *codes = malloc((size_t)(n * n_features) * sizeof(uint16_t));
    uint8_t *small = malloc((size_t)n_features);
    b.samples = malloc((size_t)n * sizeof(int32_t));
    b.features = malloc((size_t)n_features * sizeof(int64_t));
    b.constant_features = malloc((size_t)n_features * sizeof(int64_t));
    b.hist = calloc((size_t)HIST_BANKS * (SMALL_INT_MAX + 1) * (size_t)n_classes, sizeof(int32_t));
    b.counts = malloc((size_t)(2 * n + 2) * (size_t)n_classes * sizeof(double));
    b.row = malloc((size_t)n_classes * sizeof(double));
    b.keys = malloc((size_t)n * sizeof(uint64_t));
    b.keys_tmp = malloc((size_t)n * sizeof(uint64_t));
    b.group_class = malloc((size_t)n * sizeof(int32_t));
    b.group_end = malloc((size_t)n * sizeof(int64_t));
    b.total = malloc((size_t)n_classes * sizeof(double));
    b.left = malloc((size_t)n_classes * sizeof(double));
    b.right = malloc((size_t)n_classes * sizeof(double));
    int rc = -2;
    if (columns && codes && small && b.samples && b.features && b.constant_features && b.hist && b.counts && b.row &&
        b.keys && b.keys_tmp && b.group_class && b.group_end && b.total && b.left && b.right) {
        Py_BEGIN_ALLOW_THREADS
        /* Which columns hold integers 0..255 (row by row: the rows are C-ordered), then
         * their keys value * n_classes + class, or the values of the other columns. */
        for (Py_ssize_t f = 0; f < n_features; f++) {
            small[f] = 1;
            b.features[f] = f;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            const float *row = rows + i * n_features;
            for (Py_ssize_t f = 0; f < n_features; f++) {
                float x = row[f];
                small[f] &= (uint8_t)(x >= 0.0f && x <= (float)SMALL_INT_MAX &&
                                      x == (float)(int)x);
            }
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            const float *row = rows + i * n_features;
            for (Py_ssize_t f = 0; f < n_features; f++) {
                if (small[f]) {
                    codes[f * n + i] = (uint16_t)((int)row[f] * n_classes + y[i]);
                } else {
                    columns[f * n + i] = row[f];
                }
            }
        }
        for (Py_ssize_t i = 0; i < n; i++) b.samples[i] = (int32_t)i;
        b.columns = columns;
        b.codes = codes;
        b.small = small;
        rc = build(&b);
        Py_END_ALLOW_THREADS
    }
    if (rc == -2) {
        PyErr_NoMemory();
    } else if (rc == -1) {
        PyErr_SetString(PyExc_ValueError, "grow: the node arrays are too small for the tree");
    } else {
        result = Py_BuildValue("(LL)", (long long)b.node_count, (long long)b.max_depth_seen);
    }
    free(columns);
    free(codes);
    free(small);
done:
    free(b.samples);
    free(b.features);
    free(b.constant_features);
    free(b.hist);
    free(b.counts);
    free(b.row);
    free(b.keys);
    free(b.keys_tmp);
    free(b.group_class);
    free(b.group_end);
    free(b.total);
    free(b.left);
    free(b.right);
    for (int k = 0; k < got; k++) PyBuffer_Release(&v_out[k]);
    PyBuffer_Release(&v_y);
    PyBuffer_Release(&v_rows);
    return result;
}

/* numpy.random.RandomState(seed).randint(0, 2**31 - 1): the legacy generator is MT19937
 * seeded by init_genrand, and the draw keeps the first 32-bit output masked to 31 bits that is
 * at most 2**31 - 2 (numpy's masked rejection). What scikit-learn's Splitter.init draws. */
static uint32_t splitter_state(uint32_t seed)
{
    enum { N = 624, M = 397 };
    static const uint32_t mag01[2] = {0u, 0x9908b0dfu};
    uint32_t mt[N];
    mt[0] = seed;
    for (int i = 1; i < N; i++) {
        mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + (uint32_t)i;
    }
    for (int pos = N;; pos++) {
        if (pos == N) {
            int k;
            uint32_t y;
            for (k = 0; k < N - M; k++) {
                y = (mt[k] & 0x80000000u) | (mt[k + 1] & 0x7fffffffu);
                mt[k] = mt[k + M] ^ (y >> 1) ^ mag01[y & 1u];
            }
            for (; k < N - 1; k++) {
                y = (mt[k] & 0x80000000u) | (mt[k + 1] & 0x7fffffffu);
                mt[k] = mt[k + (M - N)] ^ (y >> 1) ^ mag01[y & 1u];
            }
            y = (mt[N - 1] & 0x80000000u) | (mt[0] & 0x7fffffffu);
            mt[N - 1] = mt[M - 1] ^ (y >> 1) ^ mag01[y & 1u];
            pos = 0;
        }
        uint32_t y = mt[pos];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        y ^= y >> 18;
        y &= 0x7fffffffu;
        if (y <= RAND_R_MAX - 1u) {
            return y;
        }
    }
}

PyDoc_STRVAR(state_doc,
"splitter_state(seed) -> int\n\n"
"numpy.random.RandomState(seed).randint(0, 2**31 - 1) for 0 <= seed < 2**32: the rand_r\n"
"state scikit-learn's splitter starts from, without building a RandomState.");

static PyObject *py_splitter_state(PyObject *self, PyObject *arg)
{
    (void)self;
    unsigned long long seed = PyLong_AsUnsignedLongLong(arg);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (seed > 0xffffffffull) {
        PyErr_SetString(PyExc_ValueError, "splitter_state: seed must be below 2**32");
        return NULL;
    }
    return PyLong_FromUnsignedLong(splitter_state((uint32_t)seed));
}

static PyMethodDef methods[] = {
    {"grow", grow, METH_VARARGS, grow_doc},
    {"splitter_state", py_splitter_state, METH_O, state_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tree_builder",
    "scikit-learn's entropy decision trees grown from per-node class histograms "
    "(see marketsim/policies/bagging.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_tree_builder(void)
{
    return PyModule_Create(&module);
}
