# The compiled tree's fields and the per-sample entry points the compiled SRP calls (tree.pyx).

from cpython cimport array

cdef class Fields:
    cdef public object grace_period, delta, tau, leaf_prediction, nb_threshold, max_depth
    cdef public object n_split_points, nominal_attributes, max_size_bytes, features, seed
    cdef public object n_features_in_
    cdef public list classes_, _gnum, _gnom, _vocab, _vcaps, _nc
    cdef public dict _cidx, _vocab_of
    cdef public Py_ssize_t _n_nodes, _node_cap, _slot_cap, _ccap, _n_free, _n_learned
    cdef public array.array _ni, _nf, _cc, _st, _free

cdef class Codes:
    cdef Py_ssize_t* at
    cdef Py_ssize_t stack[32]

cdef Codes value_codes(Fields t, const double* xs)
cdef bint predict_proba(Fields t, const double* xs, double* out) except -1
cdef Py_ssize_t predict_index(Fields t, const double* xs, const Py_ssize_t* codes, double* scratch) except -2
cdef int learn_sample(Fields t, const double* xs, object y, double w) except -1
cdef int learn_codes(Fields t, const double* xs, Codes gc, object y, double w) except -1
