/*
 * The requester's hand-out scans. `walk`: the block engine's hand-out loop (issue #30), the
 * requester's rule of marketsim/market/requester.py (Requester.assign) run over a block of
 * arrivals at once. `first_new`: the event engine's scan for one arriving worker with the exact
 * filter (HandedPairs.scan in marketsim/market/pairs.py), the per-label path of every small
 * market (issue #39: its Python loop was a sixth of the main command's time).
 *
 * Each arriving worker gets the first task of the ranking, from the round's cursor on, that was
 * not handed out this round and that they were never handed; when none is left in this pass the
 * round starts a new pass over the ranking (every task may be handed out again), and when none
 * is left in that one either the worker gets nothing (-1). The pairs handed out are a bit filter
 * (exact: one bit per task-worker pair; hashed: a bit per key modulo the filter's size) in front
 * of an open-addressing table of the pairs handed out since the last refresh and of the label
 * log's incidence matrix, which holds every pair received before it (row = task, columns
 * worker * K .. worker * K + K - 1): marketsim/market/pairs.py's HandedPairs, in C.
 *
 * A walk ends when `need` tasks were handed out, the arrivals are used up, or every worker
 * arrived and was refused since the last hand-out (the market is stuck; flag set).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

/* state[] slots, shared with marketsim/market/block_requester.py */
#define S_CURSOR 0
#define S_NEED 1
#define S_HANDED 2
#define S_REFUSED 3
#define S_STUCK 4
#define S_RECENT 5
#define S_EPOCH 6
#define S_EVEN 7  /* 1: even rounds (a worker who labelled every task left gets nothing) */
#define S_ROUND 8 /* tasks handed out since the pass over the ranking started */
#define S_LEN 9

#define EMPTY (-1)

typedef struct {
    uint8_t *filter;
    int64_t bits;
    int exact;
    int64_t n_workers;
    const void *indptr;
    const void *indices;
    int wide; /* incidence indices are int64 (else int32) */
    int64_t n_rows;
    int64_t n_classes;
    int64_t *recent;
    int64_t recent_mask;
} Pairs;

static inline uint64_t slot_of(int64_t key, int64_t mask)
{
    return (uint64_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 17) & (uint64_t)mask;
}

static inline int64_t at(const void *arr, int wide, int64_t i)
{
    return wide ? ((const int64_t *)arr)[i] : (int64_t)((const int32_t *)arr)[i];
}

/* Whether row `task` of the incidence has an entry in columns [low, low + K). */
static int in_log(const Pairs *p, int64_t task, int64_t low)
{
    if (p->indptr == NULL || task >= p->n_rows) {
        return 0;
    }
    int64_t lo = at(p->indptr, p->wide, task), hi = at(p->indptr, p->wide, task + 1);
    int64_t end = hi;
    while (lo < hi) {
        int64_t mid = (lo + hi) >> 1;
        if (at(p->indices, p->wide, mid) < low) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo < end && at(p->indices, p->wide, lo) < low + p->n_classes;
}

static int has(const Pairs *p, int64_t task, int64_t worker)
{
    int64_t key = task * p->n_workers + worker;
    int64_t bit = p->exact ? key : key % p->bits;
    if (!((p->filter[bit >> 3] >> (bit & 7)) & 1)) {
        return 0;
    }
    if (p->exact) {
        return 1;
    }
    for (uint64_t s = slot_of(key, p->recent_mask);; s = (s + 1) & (uint64_t)p->recent_mask) {
        int64_t held = p->recent[s];
        if (held == key) {
            return 1;
        }
        if (held == EMPTY) {
            break;
        }
    }
    return in_log(p, task, worker * p->n_classes);
}

static void mark(Pairs *p, int64_t task, int64_t worker, int64_t *state)
{
    int64_t key = task * p->n_workers + worker;
    int64_t bit = p->exact ? key : key % p->bits;
    p->filter[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    if (p->exact || p->recent == NULL) {
        return;
    }
    uint64_t s = slot_of(key, p->recent_mask);
    while (p->recent[s] != EMPTY && p->recent[s] != key) {
        s = (s + 1) & (uint64_t)p->recent_mask;
    }
    if (p->recent[s] == EMPTY) {
        p->recent[s] = key;
        state[S_RECENT] += 1;
    }
}

/* A new pass over the ranking: every task may be handed out again. */
static void next_pass(uint8_t *given, int64_t n, int64_t *state)
{
    state[S_CURSOR] = 0;
    state[S_ROUND] = 0;
    memset(given, 0, (size_t)n);
}

/* Requester.assign for one worker: the task, or -1. */
static int64_t assign(Pairs *p, const int64_t *order, uint8_t *given, int64_t n, int64_t worker,
                      int64_t *state)
{
    for (int pass = 0; pass < 2; pass++) {
        int64_t cursor = state[S_CURSOR];
        while (cursor < n && given[order[cursor]]) {
            cursor++;
        }
        state[S_CURSOR] = cursor;
        for (int64_t pos = cursor; pos < n; pos++) {
            int64_t task = order[pos];
            if (!given[task] && !has(p, task, worker)) {
                given[task] = 1;
                state[S_ROUND] += 1;
                mark(p, task, worker, state);
                return task;
            }
        }
        if (state[S_EVEN] && cursor < n) {
            return -1; /* they labelled every task left in the round: it is not over */
        }
        next_pass(given, n, state);
    }
    return -1;
}

typedef struct {
    Py_buffer view;
    int held;
} Buf;

static int get(PyObject *obj, Buf *b, int writable, Py_ssize_t itemsize, const char *name)
{
    b->held = 0;
    if (obj == Py_None) {
        b->view.buf = NULL;
        b->view.len = 0;
        return 0;
    }
    if (PyObject_GetBuffer(obj, &b->view, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) <
        0) {
        return -1;
    }
    b->held = 1;
    if (itemsize && b->view.itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "hand_out: %s must have %zd-byte items", name, itemsize);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(walk_doc,
"walk(order, given, workers, tasks_out, filter, bits, exact, n_workers, indptr, indices,\n"
"     n_classes, recent, stamp, state) -> arrivals consumed\n\n"
"Hand tasks to the arriving `workers` (int64) from the ranking `order` (int64) with the\n"
"requester's rule; `tasks_out[i]` (int64) is the task of arrival i, -1 when none was left\n"
"for them. `given` (uint8, one per task), `filter` (uint8), `recent` (int64, a power of two\n"
"long, -1 = empty; None in exact mode), `stamp` (int64, one per worker) and `state` (int64,\n"
"7 slots: cursor, need, hand-outs, refused, stuck, recent count, epoch) are updated in place.\n"
"`indptr`/`indices`: the log's incidence matrix (int32 or int64), or None.");

static PyObject *walk(PyObject *self, PyObject *args)
{
    PyObject *o[14];
    long long bits, exact, n_workers, n_classes;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOLLLOOLOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &bits,
                          &exact, &n_workers, &o[8], &o[9], &n_classes, &o[11], &o[12],
                          &o[13])) {
        return NULL;
    }
    Buf order, given, workers, out, filter, indptr, indices, recent, stamp, state;
    Buf *all[] = {&order, &given, &workers, &out, &filter, &indptr, &indices, &recent, &stamp,
                  &state};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        all[i]->held = 0;
    }
    PyObject *result = NULL;
    if (get(o[0], &order, 0, 8, "order") < 0 || get(o[1], &given, 1, 1, "given") < 0 ||
        get(o[2], &workers, 0, 8, "workers") < 0 || get(o[3], &out, 1, 8, "tasks_out") < 0 ||
        get(o[4], &filter, 1, 1, "filter") < 0 || get(o[8], &indptr, 0, 0, "indptr") < 0 ||
        get(o[9], &indices, 0, 0, "indices") < 0 || get(o[11], &recent, 1, 8, "recent") < 0 ||
        get(o[12], &stamp, 1, 8, "stamp") < 0 || get(o[13], &state, 1, 8, "state") < 0) {
        goto done;
    }
    int64_t n = order.view.len / 8, a = workers.view.len / 8;
    int64_t n_recent = recent.view.len / 8;
    int wide = indptr.held && indptr.view.itemsize == 8;
    if (given.view.len != n || out.view.len < a * 8 || state.view.len != S_LEN * 8 ||
        stamp.view.len != n_workers * 8) {
        PyErr_SetString(PyExc_ValueError, "walk: array sizes do not match");
        goto done;
    }
    if (indptr.held && ((indptr.view.itemsize != 4 && !wide) || !indices.held ||
                        indices.view.itemsize != indptr.view.itemsize)) {
        PyErr_SetString(PyExc_ValueError, "walk: indptr and indices must both be int32 or int64");
        goto done;
    }
    if (!exact && (n_recent == 0 || (n_recent & (n_recent - 1)) != 0)) {
        PyErr_SetString(PyExc_ValueError, "walk: recent must be a power of two long");
        goto done;
    }
    if (bits <= 0 || filter.view.len * 8 < bits) {
        PyErr_SetString(PyExc_ValueError, "walk: filter too small for bits");
        goto done;
    }
    Pairs p = {(uint8_t *)filter.view.buf, bits, (int)exact, n_workers,
               indptr.held ? indptr.view.buf : NULL, indices.held ? indices.view.buf : NULL,
               wide, indptr.held ? indptr.view.len / indptr.view.itemsize - 1 : 0, n_classes,
               exact ? NULL : (int64_t *)recent.view.buf, n_recent - 1};
    const int64_t *ord = (const int64_t *)order.view.buf, *who = (const int64_t *)workers.view.buf;
    int64_t *tasks = (int64_t *)out.view.buf, *st = (int64_t *)state.view.buf;
    int64_t *stamps = (int64_t *)stamp.view.buf;
    uint8_t *gv = (uint8_t *)given.view.buf;
    int64_t i = 0;
    int full = 0;
    Py_BEGIN_ALLOW_THREADS
    for (; i < a && st[S_NEED] > 0 && !st[S_STUCK]; i++) {
        int64_t w = who[i];
        if (w < 0 || w >= n_workers) {
            full = 1;
            break;
        }
        if (!exact && 2 * (st[S_RECENT] + 1) > n_recent) {
            full = 2;
            break;
        }
        int64_t task = assign(&p, ord, gv, n, w, st);
        tasks[i] = task;
        if (task >= 0) {
            st[S_HANDED] += 1;
            st[S_NEED] -= 1;
            st[S_EPOCH] += 1;
            st[S_REFUSED] = 0;
        } else if (stamps[w] != st[S_EPOCH]) {
            stamps[w] = st[S_EPOCH]; /* refused since the last hand-out or new round */
            st[S_REFUSED] += 1;
            if (st[S_REFUSED] >= n_workers) {
                if (st[S_EVEN] && st[S_ROUND] > 0) { /* no one can go on with the round */
                    next_pass(gv, n, st);
                    st[S_REFUSED] = 0;
                    st[S_EPOCH] += 1;
                } else {
                    st[S_STUCK] = 1;
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (full == 1) {
        PyErr_SetString(PyExc_ValueError, "walk: a worker id is out of range");
    } else if (full == 2) {
        PyErr_SetString(PyExc_ValueError, "walk: the table of recent pairs is full");
    } else {
        result = PyLong_FromLongLong(i);
    }
done:
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        if (all[k]->held) {
            PyBuffer_Release(&all[k]->view);
        }
    }
    return result;
}


PyDoc_STRVAR(first_new_doc,
"first_new(order, given, cursor, filter, n_workers, worker) -> (cursor, position)\n\n"
"The event engine's scan for one arriving worker (Requester.assign, exact filter): move\n"
"`cursor` past the tasks of `order` (a ranking of task ids, 4- or 8-byte items) already\n"
"`given` this round (uint8, one per task), then find the first task from there not given and\n"
"never handed to `worker` (its bit task * n_workers + worker clear in `filter`), set that bit\n"
"and return its position in `order` (-1: none left for them in this pass).");

static PyObject *first_new(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "first_new takes 6 arguments");
        return NULL;
    }
    long long cursor = PyLong_AsLongLong(args[2]);
    long long m = PyLong_AsLongLong(args[4]);
    long long worker = PyLong_AsLongLong(args[5]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Buf order, given, filter;
    order.held = given.held = filter.held = 0;
    PyObject *result = NULL;
    if (get(args[0], &order, 0, 0, "order") < 0 || get(args[1], &given, 1, 1, "given") < 0 ||
        get(args[3], &filter, 1, 1, "filter") < 0) {
        goto done;
    }
    Py_ssize_t size = order.view.itemsize;
    if (!order.held || (size != 4 && size != 8)) {
        PyErr_SetString(PyExc_ValueError, "first_new: order must have 4- or 8-byte items");
        goto done;
    }
    int64_t n = order.view.len / size, pos = -1;
    int64_t n_bits = (int64_t)filter.view.len * 8;
    if (given.view.len != n || cursor < 0 || m <= 0 || worker < 0 || worker >= m) {
        PyErr_SetString(PyExc_ValueError, "first_new: sizes or ids do not match");
        goto done;
    }
    const uint8_t *gv = (const uint8_t *)given.view.buf;
    uint8_t *bits = (uint8_t *)filter.view.buf;
    const int32_t *o32 = (const int32_t *)order.view.buf;
    const int64_t *o64 = (const int64_t *)order.view.buf;
    int bad = 0;
    for (; cursor < n; cursor++) {
        int64_t task = size == 4 ? (int64_t)o32[cursor] : o64[cursor];
        if (task < 0 || task >= n) {
            bad = 1;
            break;
        }
        if (!gv[task]) {
            break;
        }
    }
    for (int64_t at = cursor; !bad && at < n; at++) {
        int64_t task = size == 4 ? (int64_t)o32[at] : o64[at];
        if (task < 0 || task >= n) {
            bad = 1;
            break;
        }
        if (gv[task]) {
            continue;
        }
        int64_t key = task * m + worker;
        if (key >= n_bits) {
            bad = 1;
            break;
        }
        if (!((bits[key >> 3] >> (key & 7)) & 1)) {
            bits[key >> 3] |= (uint8_t)(1u << (key & 7));
            pos = at;
            break;
        }
    }
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "first_new: a task id is out of range");
    } else {
        result = Py_BuildValue("(LL)", (long long)cursor, (long long)pos);
    }
done:
    if (order.held) {
        PyBuffer_Release(&order.view);
    }
    if (given.held) {
        PyBuffer_Release(&given.view);
    }
    if (filter.held) {
        PyBuffer_Release(&filter.view);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {"first_new", (PyCFunction)(void (*)(void))first_new, METH_FASTCALL, first_new_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "hand_out",
    "The requester's hand-out scans: the block engine's loop (marketsim/market/block_requester.py)\n"
    "and the event engine's scan for one worker (marketsim/market/pairs.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_hand_out(void)
{
    return PyModule_Create(&module);
}
