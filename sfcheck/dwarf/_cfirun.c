/* The clean common case of dwarf/ehframe.py read_columns in C (optional; the Python
 * reader and dwarf/callframe.py's interpreter are the reference and the fallback).
 *
 * scan(data, vma, big, address_size, ra_col, fp_col, max_work, max_prog) walks an
 * .eh_frame section as read_columns does and returns (offsets, starts, sizes, index,
 * descs), or None whenever anything is not the plain case (a 64-bit length, an entry past
 * the section, a CIE it cannot read, an FDE whose CIE comes later, a CIE program it cannot
 * run, more work than the bounds could ever allow): then the Python reader runs from
 * scratch and reports what it reports.
 *
 * offsets/starts/sizes are native int64/uint64 columns; index (int64) says which entry of
 * descs holds each FDE's rows (FDEs with the same rows share one). An entry is the rows as
 * bytes, 7 native int64 per row: pc relative to the FDE's start, CFA register and offset,
 * RA kind and value, FP kind and value (KIND_* below; an expression, CFA (register
 * EXPR_CFA) or rule, is its block's place in `data`: offset << 32 | length). Or, for a
 * program this interpreter does not run (DW_CFA_set_loc, unknown or malformed
 * instructions, overflowing arithmetic), a tuple (CIE offset, program offset, entry end,
 * FDE start), its own entry, for the Python interpreter, which gives its rows or its error.
 *
 * Every read is checked against the entry it belongs to; LEB128 numbers are read up to
 * 9 bytes (63 bits), longer ones are left to Python. Rows are bounded: a run is refused
 * (None) when the sum of the programs' lengths could reach the file's work bounds
 * (max_work) or one program could reach the per-FDE row bound (max_prog), so no bound
 * is ever met on the C path and no row limit needs restating here.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Rule kinds (callframe.py's, in ehframe.py's _KINDS order). */
#define KIND_NONE 0
#define KIND_UNDEFINED 1
#define KIND_SAME_VALUE 2
#define KIND_OFFSET 3
#define KIND_VAL_OFFSET 4
#define KIND_REGISTER 5
#define KIND_EXPRESSION 6
#define KIND_VAL_EXPRESSION 7
/* A CFA given by an expression: register EXPR_CFA, its offset the block's place. */
#define EXPR_CFA (-2)

#define MAX_STACK 4096 /* callframe.py: remember_state nested deeper is an error */

typedef struct {
    int64_t cfa_reg, cfa_off, ra_k, ra_v, fp_k, fp_v;
} Rules;

typedef struct {
    Py_ssize_t at; /* the entry's offset */
    int64_t code_align, data_align;
    int fde_enc, has_z;
    Rules initial;
} Cie;

typedef struct {
    char *p;
    size_t len, cap;
} Buf;

static int
buf_add(Buf *b, const void *src, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        char *np = PyMem_Realloc(b->p, cap);
        if (np == NULL)
            return -1;
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, src, n);
    b->len += n;
    return 0;
}

typedef struct {
    const unsigned char *d;
    Py_ssize_t pos, end;
    int big;
} Cur;

static int
need(Cur *c, Py_ssize_t n)
{
    if (n < 0 || n > c->end - c->pos)
        return -1;
    return 0;
}

static int
rd_u(Cur *c, int size, uint64_t *out)
{
    if (need(c, size) < 0)
        return -1;
    uint64_t v = 0;
    for (int k = 0; k < size; k++) {
        unsigned b = c->d[c->pos + (c->big ? k : size - 1 - k)];
        v = (v << 8) | b;
    }
    c->pos += size;
    *out = v;
    return 0;
}

/* At most 9 bytes (63 bits): Python's reader takes longer ones. */
static int
rd_leb(Cur *c, int is_signed, int64_t *out)
{
    uint64_t v = 0;
    int shift = 0;
    while (c->pos < c->end && shift < 63) {
        unsigned b = c->d[c->pos++];
        v |= (uint64_t)(b & 0x7F) << shift;
        shift += 7;
        if (!(b & 0x80)) {
            if (is_signed && (b & 0x40))
                v |= ~(uint64_t)0 << shift;
            *out = (int64_t)v;
            return 0;
        }
    }
    return -1;
}

/* A block (LEB128 length, bytes) as its place in the data: offset << 32 | length. */
static int
rd_block(Cur *c, int64_t *out)
{
    int64_t len;
    if (rd_leb(c, 0, &len) < 0 || need(c, len) < 0 || len > 0xFFFFFFFF)
        return -1;
    *out = ((int64_t)c->pos << 32) | len;
    c->pos += len;
    return 0;
}

/* A DW_EH_PE pointer as Cursor.pointer reads it (value modulo the address size). */
static int
rd_pointer(Cur *c, int enc, uint64_t field_base, int address_size, uint64_t *out)
{
    uint64_t field_at = field_base + (uint64_t)c->pos, v;
    int64_t s;
    switch (enc & 0x0F) {
    case 0x00:
        if (rd_u(c, address_size, &v) < 0)
            return -1;
        break;
    case 0x01:
        if (rd_leb(c, 0, &s) < 0)
            return -1;
        v = (uint64_t)s;
        break;
    case 0x09:
        if (rd_leb(c, 1, &s) < 0)
            return -1;
        v = (uint64_t)s;
        break;
    case 0x02: case 0x03: case 0x04: {
        int size = (enc & 0x0F) == 0x02 ? 2 : (enc & 0x0F) == 0x03 ? 4 : 8;
        if (rd_u(c, size, &v) < 0)
            return -1;
        break;
    }
    case 0x0A: case 0x0B: case 0x0C: {
        int size = (enc & 0x0F) == 0x0A ? 2 : (enc & 0x0F) == 0x0B ? 4 : 8;
        if (rd_u(c, size, &v) < 0)
            return -1;
        if (size < 8 && (v >> (8 * size - 1)) & 1)
            v |= ~(uint64_t)0 << (8 * size);
        break;
    }
    default:
        return -1;
    }
    int app = enc & 0x70;
    if (app == 0x10)
        v += field_at;
    else if (app != 0x00 && app != 0x50)
        return -1;
    *out = address_size == 8 ? v : v & 0xFFFFFFFFu;
    return 0;
}

typedef struct {
    Rules st;
    int64_t init_ra_k, init_ra_v, init_fp_k, init_fp_v;
    int64_t loc, last;
    int64_t ra_col, fp_col;
    Rules *stack;
    Py_ssize_t depth, stack_cap;
    Buf rows;
} Run;

static void
set_rule(Run *r, int64_t reg, int64_t k, int64_t v)
{
    if (reg == r->ra_col) {
        r->st.ra_k = k;
        r->st.ra_v = v;
    }
    if (reg == r->fp_col) {
        r->st.fp_k = k;
        r->st.fp_v = v;
    }
}

static void
restore_rule(Run *r, int64_t reg)
{
    if (reg == r->ra_col) {
        r->st.ra_k = r->init_ra_k;
        r->st.ra_v = r->init_ra_v;
    }
    if (reg == r->fp_col) {
        r->st.fp_k = r->init_fp_k;
        r->st.fp_v = r->init_fp_v;
    }
}

/* callframe.State.advance: the row at loc (replacing the last at the same pc), then to. */
static int
advance(Run *r, int64_t to)
{
    int64_t row[7] = {r->loc, r->st.cfa_reg, r->st.cfa_off, r->st.ra_k, r->st.ra_v,
                      r->st.fp_k, r->st.fp_v};
    if (r->loc == r->last && r->rows.len >= sizeof row)
        memcpy(r->rows.p + r->rows.len - sizeof row, row, sizeof row);
    else {
        if (buf_add(&r->rows, row, sizeof row) < 0)
            return -2;
        r->last = r->loc;
    }
    r->loc = to;
    return 0;
}

/* loc + delta * code_align, refused (-1) on overflow. */
static int
step(Run *r, uint64_t delta, int64_t caf)
{
    int64_t prod, to;
    if (delta > INT64_MAX || __builtin_mul_overflow((int64_t)delta, caf, &prod)
        || __builtin_add_overflow(r->loc, prod, &to))
        return -1;
    return advance(r, to);
}

/* callframe._exec over data[pos:end]: 0 done, -1 not this interpreter's (Python runs it),
 * -2 out of memory (a Python error is set). in_fde: advances make rows. */
static int
exec_prog(Run *r, const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, int big,
          int64_t caf, int64_t daf, int in_fde)
{
    Cur c = {d, pos, end, big};
    int64_t a, b, prod;
    uint64_t u;
    int rc;
    while (c.pos < c.end) {
        unsigned op = d[c.pos++];
        unsigned hi = op & 0xC0, lo = op & 0x3F;
        if (hi == 0x40) {
            if (in_fde && (rc = step(r, lo, caf)) < 0)
                return rc;
            continue;
        }
        if (hi == 0x80) {
            if (rd_leb(&c, 0, &a) < 0 || __builtin_mul_overflow(a, daf, &prod))
                return -1;
            set_rule(r, lo, KIND_OFFSET, prod);
            continue;
        }
        if (hi == 0xC0) {
            restore_rule(r, lo);
            continue;
        }
        switch (op) {
        case 0x00: case 0x2D: /* nop; GNU_window_save: not an SFrame rule */
            break;
        case 0x02: case 0x03: case 0x04:
            if (rd_u(&c, op == 0x02 ? 1 : op == 0x03 ? 2 : 4, &u) < 0)
                return -1;
            if (in_fde && (rc = step(r, u, caf)) < 0)
                return rc;
            break;
        case 0x05: case 0x11: case 0x14: case 0x15: case 0x2F:
            if (rd_leb(&c, 0, &a) < 0 || rd_leb(&c, op == 0x11 || op == 0x15, &b) < 0
                || __builtin_mul_overflow(b, daf, &prod))
                return -1;
            if (op == 0x2F && __builtin_sub_overflow((int64_t)0, prod, &prod))
                return -1;
            set_rule(r, a, op == 0x14 || op == 0x15 ? KIND_VAL_OFFSET : KIND_OFFSET, prod);
            break;
        case 0x06:
            if (rd_leb(&c, 0, &a) < 0)
                return -1;
            restore_rule(r, a);
            break;
        case 0x07: case 0x08:
            if (rd_leb(&c, 0, &a) < 0)
                return -1;
            set_rule(r, a, op == 0x07 ? KIND_UNDEFINED : KIND_SAME_VALUE, 0);
            break;
        case 0x09:
            if (rd_leb(&c, 0, &a) < 0 || rd_leb(&c, 0, &b) < 0)
                return -1;
            set_rule(r, a, KIND_REGISTER, b);
            break;
        case 0x0A:
            if (r->depth > MAX_STACK)
                return -1;
            if (r->depth == r->stack_cap) {
                Py_ssize_t cap = r->stack_cap ? 2 * r->stack_cap : 8;
                Rules *ns = PyMem_Realloc(r->stack, cap * sizeof(Rules));
                if (ns == NULL)
                    return -2;
                r->stack = ns;
                r->stack_cap = cap;
            }
            r->stack[r->depth++] = r->st;
            break;
        case 0x0B:
            if (r->depth == 0)
                return -1;
            r->st = r->stack[--r->depth];
            break;
        case 0x0C:
            if (rd_leb(&c, 0, &a) < 0 || rd_leb(&c, 0, &b) < 0)
                return -1;
            r->st.cfa_reg = a;
            r->st.cfa_off = b;
            break;
        case 0x12:
            if (rd_leb(&c, 0, &a) < 0 || rd_leb(&c, 1, &b) < 0
                || __builtin_mul_overflow(b, daf, &prod))
                return -1;
            r->st.cfa_reg = a;
            r->st.cfa_off = prod;
            break;
        case 0x0D: /* an expression CFA keeps no offset */
            if (rd_leb(&c, 0, &a) < 0)
                return -1;
            if (r->st.cfa_reg == EXPR_CFA)
                r->st.cfa_off = 0;
            r->st.cfa_reg = a;
            break;
        case 0x0E: /* an expression CFA keeps no register */
            if (rd_leb(&c, 0, &a) < 0)
                return -1;
            if (r->st.cfa_reg == EXPR_CFA)
                r->st.cfa_reg = -1;
            r->st.cfa_off = a;
            break;
        case 0x13:
            if (rd_leb(&c, 1, &b) < 0 || __builtin_mul_overflow(b, daf, &prod))
                return -1;
            if (r->st.cfa_reg == EXPR_CFA)
                r->st.cfa_reg = -1;
            r->st.cfa_off = prod;
            break;
        case 0x0F:
            if (rd_block(&c, &a) < 0)
                return -1;
            r->st.cfa_reg = EXPR_CFA;
            r->st.cfa_off = a;
            break;
        case 0x10: case 0x16:
            if (rd_leb(&c, 0, &a) < 0 || rd_block(&c, &b) < 0)
                return -1;
            set_rule(r, a, op == 0x10 ? KIND_EXPRESSION : KIND_VAL_EXPRESSION, b);
            break;
        case 0x2E:
            if (rd_leb(&c, 0, &a) < 0)
                return -1;
            break;
        default: /* set_loc, unknown: Python's */
            return -1;
        }
    }
    return 0;
}

/* A CIE at `at` (body after the CIE id from c->pos to c->end) as ehframe._cie reads it,
 * its initial instructions run: 0, or -1 when Python should read the section. */
static int
read_cie(Cur *c, Py_ssize_t at, uint64_t vma, int address_size, Run *r, Cie *out)
{
    uint64_t u;
    int64_t a;
    if (need(c, 1) < 0)
        return -1;
    unsigned version = c->d[c->pos++];
    if (version != 1 && version != 3 && version != 4)
        return -1;
    const unsigned char *aug = c->d + c->pos;
    const unsigned char *nul = memchr(aug, 0, (size_t)(c->end - c->pos));
    if (nul == NULL)
        return -1;
    Py_ssize_t aug_len = nul - aug;
    c->pos += aug_len + 1;
    for (Py_ssize_t k = 0; k + 1 < aug_len; k++)
        if (aug[k] == 'e' && aug[k + 1] == 'h') {
            if (need(c, address_size) < 0)
                return -1;
            c->pos += address_size;
            break;
        }
    if (version == 4) {
        if (need(c, 2) < 0)
            return -1;
        c->pos += 2;
    }
    out->at = at;
    if (rd_leb(c, 0, &out->code_align) < 0 || rd_leb(c, 1, &out->data_align) < 0)
        return -1;
    if (version == 1 ? rd_u(c, 1, &u) : rd_leb(c, 0, &a))
        return -1;
    out->fde_enc = 0;
    out->has_z = aug_len > 0 && aug[0] == 'z';
    if (out->has_z) {
        int64_t n;
        if (rd_leb(c, 0, &n) < 0 || need(c, n) < 0)
            return -1;
        Cur ac = {c->d, c->pos, c->pos + n, c->big};
        c->pos += n;
        for (Py_ssize_t k = 1; k < aug_len; k++) {
            unsigned ch = aug[k];
            if (ch == 'R') {
                if (rd_u(&ac, 1, &u) < 0)
                    return -1;
                out->fde_enc = (int)u;
            } else if (ch == 'P') {
                if (rd_u(&ac, 1, &u) < 0 || rd_pointer(&ac, (int)(u & 0x7F), 0, address_size,
                                                       &u) < 0)
                    return -1;
            } else if (ch == 'L') {
                if (rd_u(&ac, 1, &u) < 0)
                    return -1;
            } else if (ch != 'S' && ch != 'B' && ch != 'G') {
                break;
            }
        }
    }
    (void)vma;
    /* The initial instructions, as callframe.run runs them once per CIE. */
    r->st = (Rules){-1, 0, KIND_NONE, 0, KIND_NONE, 0};
    r->init_ra_k = r->init_fp_k = KIND_NONE;
    r->init_ra_v = r->init_fp_v = 0;
    r->depth = 0;
    r->loc = 0;
    if (exec_prog(r, c->d, c->pos, c->end, c->big, out->code_align, out->data_align, 0) != 0
        || r->depth != 0)
        return -1;
    out->initial = r->st;
    return 0;
}


static PyObject *
scan(PyObject *self, PyObject *args)
{
    Py_buffer view;
    unsigned long long vma;
    int big, address_size;
    long long ra_col, fp_col;
    Py_ssize_t max_work, max_prog;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*KpiLLnn", &view, &vma, &big, &address_size, &ra_col,
                          &fp_col, &max_work, &max_prog))
        return NULL;
    const unsigned char *d = view.buf;
    Py_ssize_t n = view.len, pos = 0, work = 0;
    PyObject *result = NULL, *descs = NULL, *seen = NULL;
    Buf offsets = {0}, starts = {0}, sizes = {0}, index = {0}, cies = {0};
    Run r;
    memset(&r, 0, sizeof r);
    r.ra_col = ra_col;
    r.fp_col = fp_col;
    int refused = 0;
    /* (blocks are told by their place: offset << 32 | length) */
    if ((address_size != 4 && address_size != 8) || n > 0x7FFFFFFF)
        goto refuse;
    descs = PyList_New(0);
    seen = PyDict_New(); /* rows (bytes) -> their index in descs */
    if (descs == NULL || seen == NULL)
        goto fail;
    while (n - pos >= 4) {
        Cur hc = {d, pos, n, big};
        uint64_t length, ident, start, size;
        rd_u(&hc, 4, &length);
        if (length == 0) {
            pos += 4;
            continue;
        }
        if (length == 0xFFFFFFFFu || length < 4 || (uint64_t)(n - pos - 4) < length)
            goto refuse;
        Py_ssize_t body = pos + 4, end = body + (Py_ssize_t)length;
        Cur c = {d, body, end, big};
        rd_u(&c, 4, &ident);
        if (ident == 0) {
            Cie cie;
            work += end - c.pos;
            if (work > max_work || read_cie(&c, pos, vma, address_size, &r, &cie) < 0)
                goto refuse;
            if (buf_add(&cies, &cie, sizeof cie) < 0)
                goto nomem;
            pos = end;
            continue;
        }
        /* The FDE's CIE among those read so far (in section order: a binary search). */
        Py_ssize_t cie_at = body - (Py_ssize_t)ident;
        const Cie *all = (const Cie *)cies.p, *cie = NULL;
        Py_ssize_t lo = 0, hi = (Py_ssize_t)(cies.len / sizeof(Cie));
        while (lo < hi) {
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (all[mid].at < cie_at)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < (Py_ssize_t)(cies.len / sizeof(Cie)) && all[lo].at == cie_at)
            cie = &all[lo];
        if (cie == NULL)
            goto refuse;
        if (rd_pointer(&c, cie->fde_enc, vma, address_size, &start) < 0
            || rd_pointer(&c, cie->fde_enc & 0x0F, vma, address_size, &size) < 0)
            goto refuse;
        if (cie->has_z) {
            int64_t alen;
            if (rd_leb(&c, 0, &alen) < 0 || need(&c, alen) < 0)
                goto refuse;
            c.pos += alen;
        }
        Py_ssize_t prog_at = c.pos;
        work += end - prog_at + 1;
        if (work > max_work || end - prog_at > max_prog)
            goto refuse;
        r.st = cie->initial;
        r.init_ra_k = r.st.ra_k;
        r.init_ra_v = r.st.ra_v;
        r.init_fp_k = r.st.fp_k;
        r.init_fp_v = r.st.fp_v;
        r.loc = 0;
        r.last = -1;
        r.depth = 0;
        r.rows.len = 0;
        int rc = exec_prog(&r, d, prog_at, end, big, cie->code_align, cie->data_align, 1);
        if (rc == 0)
            rc = advance(&r, r.loc);
        if (rc == -2)
            goto nomem;
        PyObject *item = rc == 0 ? PyBytes_FromStringAndSize(r.rows.p, (Py_ssize_t)r.rows.len)
                                 : Py_BuildValue("(nnnK)", cie_at, prog_at, end,
                                                 (unsigned long long)start);
        if (item == NULL)
            goto fail;
        int64_t at = PyList_GET_SIZE(descs);
        PyObject *known = rc == 0 ? PyDict_GetItemWithError(seen, item) : NULL;
        if (known != NULL)
            at = PyLong_AsLongLong(known);
        else if (PyErr_Occurred())
            at = -1;
        else {
            PyObject *k = PyLong_FromLongLong(at);
            if (k == NULL || (rc == 0 && PyDict_SetItem(seen, item, k) < 0)
                || PyList_Append(descs, item) < 0)
                at = -1;
            Py_XDECREF(k);
        }
        Py_DECREF(item);
        if (at < 0)
            goto fail;
        int64_t off = pos;
        if (buf_add(&offsets, &off, 8) < 0 || buf_add(&starts, &start, 8) < 0
            || buf_add(&sizes, &size, 8) < 0 || buf_add(&index, &at, 8) < 0)
            goto nomem;
        pos = end;
    }
    result = Py_BuildValue("(y#y#y#y#O)", offsets.p ? offsets.p : "", (Py_ssize_t)offsets.len,
                           starts.p ? starts.p : "", (Py_ssize_t)starts.len,
                           sizes.p ? sizes.p : "", (Py_ssize_t)sizes.len,
                           index.p ? index.p : "", (Py_ssize_t)index.len, descs);
    goto done;
refuse:
    refused = 1;
    goto done;
nomem:
    PyErr_NoMemory();
fail:
    result = NULL;
done:
    Py_XDECREF(descs);
    Py_XDECREF(seen);
    PyMem_Free(index.p);
    PyMem_Free(offsets.p);
    PyMem_Free(starts.p);
    PyMem_Free(sizes.p);
    PyMem_Free(cies.p);
    PyMem_Free(r.rows.p);
    PyMem_Free(r.stack);
    PyBuffer_Release(&view);
    if (refused)
        Py_RETURN_NONE;
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, vma, big, address_size, ra_col, fp_col, max_work, max_prog)\n"
     "-> (offsets, starts, sizes, index, descs) | None\n\n"
     "An .eh_frame section's FDEs and their rows as dwarf/ehframe.py read_columns\n"
     "reads them, or None where that reader must run."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "sfcheck.dwarf._cfirun",
    "The .eh_frame reader's common case in C.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__cfirun(void)
{
    return PyModule_Create(&module);
}
