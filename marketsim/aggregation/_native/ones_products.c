/* Products of a 0/1 CSR pattern (a label incidence matrix whose values are all 1.0) with dense
 * float64 vectors, without the values array: 8 bytes a label the market does not hold (issue
 * #30). Each sum adds its terms in the order scipy's sparsetools kernels do (csr_matvec: a row's
 * terms from the left onto what the output already holds; csc_matvec(s): the transposed product
 * scattered row after row), and 1.0 * x == x exactly, so the results are bit for bit scipy's on
 * the same pattern with values of 1.0.
 *
 * Built by setup.py (optional, like the policies' tree builder); without it the label log keeps
 * the values and scipy's kernels run.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    Py_buffer indptr, indices, x, out;
} Views;

static void release(Views *v)
{
    PyBuffer_Release(&v->indptr);
    PyBuffer_Release(&v->indices);
    PyBuffer_Release(&v->x);
    PyBuffer_Release(&v->out);
}

/* The four buffers, C-contiguous; index arrays of one width (4 or 8 bytes), floats of 8. */
static int get_views(PyObject *args, Views *v, Py_ssize_t *k)
{
    PyObject *o[4];
    memset(v, 0, sizeof *v);
    *k = 1;
    if (!PyArg_ParseTuple(args, "OOOO|n", &o[0], &o[1], &o[2], &o[3], k)) return -1;
    Py_buffer *b[4] = {&v->indptr, &v->indices, &v->x, &v->out};
    for (int i = 0; i < 4; i++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (i == 3 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(o[i], b[i], flags) < 0) {
            release(v);
            return -1;
        }
    }
    if ((v->indptr.itemsize != 4 && v->indptr.itemsize != 8)
        || v->indices.itemsize != v->indptr.itemsize || v->x.itemsize != 8
        || v->out.itemsize != 8 || v->indptr.len < v->indptr.itemsize || *k < 1) {
        PyErr_SetString(PyExc_ValueError,
                        "expected int32 or int64 indptr and indices of one type, float64 x and out");
        release(v);
        return -1;
    }
    return 0;
}

#define ROW_SUMS(T)                                                                   \
    do {                                                                              \
        const T *ptr = (const T *)v.indptr.buf, *idx = (const T *)v.indices.buf;      \
        for (Py_ssize_t i = 0; i < rows && !bad; i++) {                               \
            double sum = out[i];                                                      \
            for (T p = ptr[i]; p < ptr[i + 1]; p++) {                                 \
                if ((uint64_t)idx[p] >= (uint64_t)limit) { bad = 1; break; }          \
                sum += x[idx[p]];                                                     \
            }                                                                         \
            out[i] = sum;                                                             \
        }                                                                             \
    } while (0)

#define SCATTER(T)                                                                    \
    do {                                                                              \
        const T *ptr = (const T *)v.indptr.buf, *idx = (const T *)v.indices.buf;      \
        for (Py_ssize_t j = 0; j < rows && !bad; j++) {                               \
            const double *xj = x + j * k;                                             \
            for (T p = ptr[j]; p < ptr[j + 1]; p++) {                                 \
                if ((uint64_t)idx[p] >= (uint64_t)limit) { bad = 1; break; }          \
                double *oi = out + (Py_ssize_t)idx[p] * k;                            \
                for (Py_ssize_t c = 0; c < k; c++) oi[c] += xj[c];                    \
            }                                                                         \
        }                                                                             \
    } while (0)

/* Whether the row pointers are in order and inside the indices, and the dense buffers hold
 * the rows (checked before the loops, which check each column index as they read it). */
static int in_bounds(Views *v, Py_ssize_t rows, Py_ssize_t k, int scatter)
{
    Py_ssize_t nnz = v->indices.len / v->indices.itemsize;
    Py_ssize_t n_x = v->x.len / 8, n_out = v->out.len / 8;
    if (scatter ? (n_x < rows * k || n_out % k) : (n_out < rows)) return 0;
    int wide = v->indptr.itemsize == 8;
    const int32_t *p4 = (const int32_t *)v->indptr.buf;
    const int64_t *p8 = (const int64_t *)v->indptr.buf;
    int64_t prev = wide ? p8[0] : p4[0];
    if (prev < 0) return 0;
    for (Py_ssize_t i = 1; i <= rows; i++) {
        int64_t next = wide ? p8[i] : p4[i];
        if (next < prev) return 0;
        prev = next;
    }
    return prev <= nnz;
}

PyDoc_STRVAR(row_sums_doc,
"row_sums(indptr, indices, x, out)\n\n"
"out[i] += the sum of x[indices[p]] over row i's entries, rows 0..len(indptr)-2, added from\n"
"the left (scipy's csr_matvec with values of 1.0). indptr may be a slice of a matrix's.");

static PyObject *row_sums(PyObject *self, PyObject *args)
{
    Views v;
    Py_ssize_t k;
    (void)self;
    if (get_views(args, &v, &k) < 0) return NULL;
    Py_ssize_t rows = v.indptr.len / v.indptr.itemsize - 1;
    if (!in_bounds(&v, rows, 1, 0)) {
        release(&v);
        PyErr_SetString(PyExc_ValueError, "row_sums: bad row pointers or sizes");
        return NULL;
    }
    const double *x = (const double *)v.x.buf;
    double *out = (double *)v.out.buf;
    Py_ssize_t limit = v.x.len / 8;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    if (v.indptr.itemsize == 4) ROW_SUMS(int32_t); else ROW_SUMS(int64_t);
    Py_END_ALLOW_THREADS
    release(&v);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "row_sums: a column index is out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(scatter_sums_doc,
"scatter_sums(indptr, indices, x, out, k=1)\n\n"
"out[indices[p], :] += x[j, :] for each row j's entries p in order (x: rows x k, out:\n"
"columns x k, C order): the transposed product as scipy's csc_matvec (k = 1) and csc_matvecs\n"
"add it, with values of 1.0.");

static PyObject *scatter_sums(PyObject *self, PyObject *args)
{
    Views v;
    Py_ssize_t k;
    (void)self;
    if (get_views(args, &v, &k) < 0) return NULL;
    Py_ssize_t rows = v.indptr.len / v.indptr.itemsize - 1;
    if (!in_bounds(&v, rows, k, 1)) {
        release(&v);
        PyErr_SetString(PyExc_ValueError, "scatter_sums: bad row pointers or sizes");
        return NULL;
    }
    const double *x = (const double *)v.x.buf;
    double *out = (double *)v.out.buf;
    Py_ssize_t limit = v.out.len / 8 / k;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    if (v.indptr.itemsize == 4) SCATTER(int32_t); else SCATTER(int64_t);
    Py_END_ALLOW_THREADS
    release(&v);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "scatter_sums: a column index is out of range");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"row_sums", row_sums, METH_VARARGS, row_sums_doc},
    {"scatter_sums", scatter_sums, METH_VARARGS, scatter_sums_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ones_products",
    "Products of a 0/1 CSR pattern with float64 vectors, in scipy's order of additions.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_ones_products(void)
{
    return PyModule_Create(&module);
}
