/* The FRE walk of walk/fast.Table, in C (optional; the regex path there is
 * the reference and the fallback).
 *
 * verdicts(data, walk_from, ends, types, nfs, sizes, bad, spec) walks, for every FDE i
 * with bad[i] == 0, data[walk_from[i]:ends[i]] as FREs and sets bad[i] = 1 unless the
 * regex path would accept the FDE: the bytes split exactly into FREs that
 * fre_patterns.fre_pattern accepts, their count is nfs[i] (so the count fits the block:
 * format/bounds.py fres_fit, the decoder's test), and (types 0-2) the starts pass
 * rules/fre.py's starts_ok (restated in walk_one below: tests/test_walk_paths.py runs
 * every case through that function, the reference check, the regex walk and this one).
 * Which info bytes and data words are acceptable is not decided here: `spec` is fre_patterns.walk_spec's tables, built from
 * the same predicates as the regex. Layout: SPEC_* below, mirrored from fre_patterns.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SPEC_INFO_OK 0
#define SPEC_INFO_WSIZE 256
#define SPEC_INFO_COUNT 512
#define SPEC_INFO_FLAGS 768
#define SPEC_CFA 1024
#define SPEC_SLOT (SPEC_CFA + 3 * 768)
#define SPEC_BIG (SPEC_SLOT + 256)
#define SPEC_LEN (SPEC_BIG + 1)

/* Word size 1, 2, 4 -> index of its CFA tables. */
static int
wsize_index(unsigned w)
{
    return w == 1 ? 0 : w == 2 ? 1 : w == 4 ? 2 : -1;
}

/* An SP-based CFA word of `w` bytes at p passes the classes (the regex's arms). */
static int
cfa_ok(const unsigned char *spec, const unsigned char *p, unsigned w, int big)
{
    const unsigned char *t = spec + SPEC_CFA + 768 * wsize_index(w);
    if (w == 1)
        return t[p[0]];
    unsigned lo = big ? p[w - 1] : p[0];
    unsigned hi = big ? p[0] : p[w - 1];
    if (t[lo] && t[256 + hi])
        return 1;
    if (!t[512 + lo])
        return 0;
    /* a sign-extended low byte: every other byte 0xff */
    for (unsigned k = 0; k < w; k++) {
        const unsigned char *b = big ? p + w - 1 - k : p + k;
        if (k > 0 && *b != 0xff)
            return 0;
    }
    return 1;
}

/* The FRE at data[pos:end] per the spec: its length, or 0 when the regex would match
 * no FRE there (then it matches one byte, an empty findall item). */
static Py_ssize_t
fre_len(const unsigned char *spec, const unsigned char *data, Py_ssize_t pos, Py_ssize_t end,
        unsigned asz, int big)
{
    if (end - pos < (Py_ssize_t)asz + 1)
        return 0;
    unsigned info = data[pos + asz];
    if (!spec[SPEC_INFO_OK + info])
        return 0;
    unsigned w = spec[SPEC_INFO_WSIZE + info], n = spec[SPEC_INFO_COUNT + info];
    unsigned flags = spec[SPEC_INFO_FLAGS + info];
    Py_ssize_t len = (Py_ssize_t)asz + 1 + (Py_ssize_t)w * n;
    if (end - pos < len)
        return 0;
    const unsigned char *words = data + pos + asz + 1;
    for (unsigned k = 0; k < n; k++) {
        const unsigned char *p = words + (size_t)k * w;
        if (k == 0 && (flags & 1)) {
            if (!cfa_ok(spec, p, w, big))
                return 0;
        } else if (k > 0 && (flags & 2)) {
            if (!spec[SPEC_SLOT + (big ? p[w - 1] : p[0])])
                return 0;
        }
    }
    return len;
}

static uint32_t
read_start(const unsigned char *p, unsigned asz, int big)
{
    uint32_t v = 0;
    for (unsigned k = 0; k < asz; k++)
        v |= (uint32_t)(big ? p[k] : p[asz - 1 - k]) << (8 * (asz - 1 - k));
    return v;
}

#define BAD 1
#define EMPTY 2 /* the count is right, but some item is empty (a byte starting no FRE) */

/* The verdict on one FDE: BAD and/or EMPTY. */
static int
walk_one(const unsigned char *spec, const unsigned char *data, Py_ssize_t pos, Py_ssize_t end,
         unsigned type, unsigned long long nfs, unsigned long long size)
{
    int big = spec[SPEC_BIG];
    /* types 0-2 have starts of 1, 2, 4 bytes; Table walks any other type with the
     * 1-byte pattern and tests only the item count (such FDEs arrive rejected there) */
    int starts = type < 3;
    unsigned asz = type == 1 ? 2 : type == 2 ? 4 : 1;
    unsigned long long count = 0;
    uint32_t prev = 0;
    int empty = 0, order = 1;
    while (pos < end) {
        Py_ssize_t len = fre_len(spec, data, pos, end, asz, big);
        if (++count > nfs)
            return BAD;
        if (len == 0) {
            empty = 1;
            pos += 1;
            continue;
        }
        if (starts) {
            uint32_t v = read_start(data + pos, asz, big);
            if (count == 1 ? v != 0 : v <= prev)
                order = 0;
            prev = v;
        }
        pos += len;
    }
    if (count != nfs)
        return BAD;
    if (empty)
        return starts ? BAD | EMPTY : EMPTY;
    return starts && count > 0 && (!order || prev >= size) ? BAD : 0;
}

/* A list or tuple of n ints (Py_ssize_t >= 0 when !wide, else unsigned 64-bit). */
static int
get_column(PyObject *obj, const char *name, Py_ssize_t n, void *out, int wide)
{
    PyObject *seq = PySequence_Fast(obj, name);
    if (seq == NULL)
        return -1;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_Format(PyExc_ValueError, "%s: %zd items, expected %zd", name,
                     PySequence_Fast_GET_SIZE(seq), n);
        Py_DECREF(seq);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (wide) {
            unsigned long long v = PyLong_AsUnsignedLongLong(items[i]);
            if (v == (unsigned long long)-1 && PyErr_Occurred())
                goto fail;
            ((unsigned long long *)out)[i] = v;
        } else {
            Py_ssize_t v = PyLong_AsSsize_t(items[i]);
            if (v == -1 && PyErr_Occurred())
                goto fail;
            if (v < 0) {
                PyErr_Format(PyExc_ValueError, "%s[%zd] is negative", name, i);
                goto fail;
            }
            ((Py_ssize_t *)out)[i] = v;
        }
    }
    Py_DECREF(seq);
    return 0;
fail:
    Py_DECREF(seq);
    return -1;
}

static int
check_spec(const unsigned char *spec)
{
    for (int info = 0; info < 256; info++) {
        if (spec[SPEC_INFO_OK + info] > 1 || spec[SPEC_INFO_FLAGS + info] > 3
            || (spec[SPEC_INFO_OK + info]
                && (wsize_index(spec[SPEC_INFO_WSIZE + info]) < 0
                    || spec[SPEC_INFO_COUNT + info] > 15)))
            return -1;
    }
    return spec[SPEC_BIG] > 1 ? -1 : 0;
}

static PyObject *
verdicts(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *walk_obj, *ends_obj, *nfs_obj, *sizes_obj;
    Py_buffer data, types, bad, spec;
    if (!PyArg_ParseTuple(args, "y*OOy*OOw*y*:verdicts", &data, &walk_obj, &ends_obj, &types,
                          &nfs_obj, &sizes_obj, &bad, &spec))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = bad.len;
    Py_ssize_t *walk = NULL, *ends = NULL;
    unsigned long long *nfs = NULL, *sizes = NULL;
    if (types.len != n) {
        PyErr_SetString(PyExc_ValueError, "types and bad differ in length");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (((const unsigned char *)bad.buf)[i] > 1) { /* 2 is a mark of the walk below */
            PyErr_SetString(PyExc_ValueError, "bad holds a value other than 0 and 1");
            goto done;
        }
    }
    if (spec.len != SPEC_LEN || check_spec(spec.buf) < 0) {
        PyErr_SetString(PyExc_ValueError, "spec is not a fre_patterns.walk_spec table");
        goto done;
    }
    walk = PyMem_New(Py_ssize_t, n ? n : 1);
    ends = PyMem_New(Py_ssize_t, n ? n : 1);
    nfs = PyMem_New(unsigned long long, n ? n : 1);
    sizes = PyMem_New(unsigned long long, n ? n : 1);
    if (!walk || !ends || !nfs || !sizes) {
        PyErr_NoMemory();
        goto done;
    }
    if (get_column(walk_obj, "walk_from", n, walk, 0) < 0
        || get_column(ends_obj, "ends", n, ends, 0) < 0
        || get_column(nfs_obj, "nfs", n, nfs, 1) < 0
        || get_column(sizes_obj, "sizes", n, sizes, 1) < 0)
        goto done;
    const unsigned char *d = data.buf, *ty = types.buf, *sp = spec.buf;
    unsigned char *b = bad.buf;
    Py_ssize_t len = data.len;
    Py_BEGIN_ALLOW_THREADS
    /* An empty item in a type 0-2 FDE whose count is right makes the regex path reject
     * every FDE with an empty item, of other types too (_check_starts): note them. */
    int spread = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (b[i])
            continue;
        /* findall(data, pos, endpos) clamps both to len(data); pos > endpos: no items */
        Py_ssize_t end = ends[i] < len ? ends[i] : len;
        Py_ssize_t pos = walk[i] < len ? walk[i] : len;
        if (pos > end)
            pos = end;
        int v = walk_one(sp, d, pos, end, ty[i], nfs[i], sizes[i]);
        if (v & BAD)
            b[i] = 1;
        else if (v & EMPTY)
            b[i] = 2;
        if ((v & EMPTY) && ty[i] < 3)
            spread = 1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (b[i] == 2)
            b[i] = spread;
    Py_END_ALLOW_THREADS
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(walk);
    PyMem_Free(ends);
    PyMem_Free(nfs);
    PyMem_Free(sizes);
    PyBuffer_Release(&data);
    PyBuffer_Release(&types);
    PyBuffer_Release(&bad);
    PyBuffer_Release(&spec);
    return result;
}

static PyMethodDef methods[] = {
    {"verdicts", verdicts, METH_VARARGS,
     "verdicts(data, walk_from, ends, types, nfs, sizes, bad, spec) -> None\n\n"
     "Set bad[i] = 1 for each FDE i with bad[i] == 0 whose FRE block\n"
     "data[walk_from[i]:ends[i]] the fast path's regex walk would not accept."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sfcheck.walk._frewalk", "The fast path's FRE walk in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__frewalk(void)
{
    return PyModule_Create(&module);
}
