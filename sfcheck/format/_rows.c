/* The clean case of format/decode.Decoder.fde_rows (and fde(with_fres=False)) in C.
 *
 * Derived from the Python reference (sfcheck/format/decode.py), which stays the oracle:
 * rows() returns the FDE record's fields with its FREs' starts and (info byte, data
 * words), or None whenever any bound the reference checks does not hold (an FDE outside
 * the section, an attribute record or FRE block outside the FRE sub-section, an FRE type
 * above 2, num_fres FREs that cannot fit, an FRE past the end, size code 3). The caller
 * then runs the reference, which raises the located DecodeError: this file never words an
 * error. Every read is bounds-checked against the bytes, and num_fres drives no loop or
 * allocation before it is checked against the bytes left (fres_fit in format/bounds.py).
 * tests/test_rows_c.py pins it to the reference.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static uint64_t
get_u(const unsigned char *p, int n, int big)
{
    uint64_t v = 0;
    int k;
    if (big)
        for (k = 0; k < n; k++)
            v = (v << 8) | p[k];
    else
        for (k = n - 1; k >= 0; k--)
            v = (v << 8) | p[k];
    return v;
}

static int64_t
get_s(const unsigned char *p, int n, int big)
{
    uint64_t v = get_u(p, n, big);
    if (n < 8 && (v >> (8 * n - 1)) & 1)
        return (int64_t)(v | (~(uint64_t)0 << (8 * n)));
    return (int64_t)v;
}

/* The word size of an FRE info byte's size code (bits 5-6); 0 for code 3 (invalid). */
static const int WORD[4] = {1, 2, 4, 0};

/* rows(data, index, fdes_start, version, big_endian, fres_start, fre_len, fre_limit,
 *      with_fres)
 * -> (start, size, info, rep_size, info2, padding, fre_off, num_fres, offset, starts, rows)
 *    (starts and rows None without with_fres), or None: the reference decides. */
static PyObject *
rows(PyObject *self, PyObject *args)
{
    Py_buffer buf;
    long long index, fdes_start, fres_start, fre_len, fre_limit;
    int version, big, with_fres;
    PyObject *result = NULL, *starts = NULL, *list = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*LLipLLLp", &buf, &index, &fdes_start, &version, &big,
                          &fres_start, &fre_len, &fre_limit, &with_fres))
        return NULL;
    const unsigned char *d = buf.buf;
    long long n = buf.len;
    long long fde_size = version == 3 ? 16 : version == 2 ? 20 : version == 1 ? 17 : 0;
    long long off, fres_pos, fre_off, size, num_fres;
    long long start;
    int info, info2 = 0, rep_size = 0, padding = 0;
    if (!fde_size || index < 0 || index > (1LL << 40) || fdes_start < 0 || fres_start < 0
        || fre_len < 0 || fre_limit > n)
        goto none;
    off = fdes_start + index * fde_size;
    if (off < 0 || off + fde_size > n)
        goto none;
    if (version == 3) {
        long long attr;
        start = get_s(d + off, 8, big);
        size = (long long)get_u(d + off + 8, 4, big);
        fre_off = (long long)get_u(d + off + 12, 4, big);
        attr = fres_start + fre_off;
        if (fre_off + 5 > fre_len || attr + 5 > fre_limit || attr + 5 > n)
            goto none;
        num_fres = (long long)get_u(d + attr, 2, big);
        info = d[attr + 2];
        info2 = d[attr + 3];
        rep_size = d[attr + 4];
        fres_pos = attr + 5;
    } else {
        start = get_s(d + off, 4, big);
        size = (long long)get_u(d + off + 4, 4, big);
        fre_off = (long long)get_u(d + off + 8, 4, big);
        num_fres = (long long)get_u(d + off + 12, 4, big);
        info = d[off + 16];
        if (version == 2) {
            rep_size = d[off + 17];
            padding = (int)get_u(d + off + 18, 2, big);
        }
        fres_pos = fres_start + fre_off;
        if (fre_off > fre_len)
            goto none;
    }
    if (with_fres) {
        int fre_type = info & 0xF;
        int asz = fre_type == 0 ? 1 : fre_type == 1 ? 2 : fre_type == 2 ? 4 : 0;
        long long pos = fres_pos, j;
        if (!asz)
            goto none;
        /* fres_fit: num_fres FREs of the smallest shape fit before fre_limit. */
        if (num_fres * (asz + 1) > fre_limit - pos)
            goto none;
        starts = PyList_New((Py_ssize_t)num_fres);
        list = PyList_New((Py_ssize_t)num_fres);
        if (!starts || !list)
            goto fail;
        for (j = 0; j < num_fres; j++) {
            int fi, count, w, k;
            PyObject *words, *row, *v;
            if (pos < 0 || pos + asz + 1 > fre_limit)
                goto clear;
            fi = d[pos + asz];
            count = (fi >> 1) & 0xF;
            w = WORD[(fi >> 5) & 3];
            if (!w || pos + asz + 1 + (long long)count * w > fre_limit)
                goto clear;
            v = PyLong_FromUnsignedLongLong(get_u(d + pos, asz, big));
            if (!v)
                goto fail;
            PyList_SET_ITEM(starts, (Py_ssize_t)j, v);
            words = PyTuple_New(count);
            if (!words)
                goto fail;
            for (k = 0; k < count; k++) {
                v = PyLong_FromLongLong(get_s(d + pos + asz + 1 + (long long)k * w, w, big));
                if (!v) {
                    Py_DECREF(words);
                    goto fail;
                }
                PyTuple_SET_ITEM(words, k, v);
            }
            row = Py_BuildValue("(iN)", fi, words);
            if (!row)
                goto fail;
            PyList_SET_ITEM(list, (Py_ssize_t)j, row);
            pos += asz + 1 + (long long)count * w;
        }
    } else {
        starts = Py_None;
        list = Py_None;
        Py_INCREF(Py_None);
        Py_INCREF(Py_None);
    }
    result = Py_BuildValue("(LLiiiiLLLNN)", start, size, info, rep_size, info2, padding,
                           fre_off, num_fres, off, starts, list);
    PyBuffer_Release(&buf);
    return result;
clear:
    Py_XDECREF(starts);
    Py_XDECREF(list);
none:
    PyBuffer_Release(&buf);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(starts);
    Py_XDECREF(list);
    PyBuffer_Release(&buf);
    return NULL;
}

static PyMethodDef methods[] = {
    {"rows", rows, METH_VARARGS,
     "rows(data, index, fdes_start, version, big_endian, fres_start, fre_len, fre_limit, "
     "with_fres): FDE `index`'s record, FRE starts and (info, words) rows when it decodes "
     "cleanly, else None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rows",
    "The clean case of format/decode.Decoder.fde_rows in C (the Python reference decides "
    "everything else).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__rows(void)
{
    return PyModule_Create(&module);
}
