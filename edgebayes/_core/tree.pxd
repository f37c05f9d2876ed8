# The compiled tree's fields and the per-sample entry points the compiled SRP calls (tree.pyx).

from cpython cimport array

cdef class Fields:
    cdef public object grace_period, delta, tau, leaf_prediction, nb_threshold, max_depth
    cdef public object n_split_points, nominal_attributes, max_size_bytes, features, seed
    cdef public object n_features_in_, _bytes
    cdef public list classes_, _numeric_features, _nominal_features, _vocabs, _value_caps, _nominal_counts
    cdef public dict _class_index, _vocab_of
    cdef public Py_ssize_t _n_nodes, _node_cap, _slot_cap, _class_cap, _n_free_slots, _n_learned
    cdef public array.array _node_ints, _node_floats, _class_weights, _gaussians, _free_slots

cdef class Codes:
    cdef Py_ssize_t* at
    cdef Py_ssize_t stack[32]

cdef struct Tested:
    # what a test's prediction computed that the training right after it reuses
    Py_ssize_t node  # the leaf whose naive Bayes votes it computed, -1 for none
    Py_ssize_t best  # the first class of highest vote there, -1 when none is finite

cdef Codes value_codes(Fields t, const double* xs)
cdef bint predict_proba(Fields t, const double* xs, double* out) except -1
cdef Py_ssize_t predict_index(Fields t, const double* xs, const Py_ssize_t* codes, double* scratch,
                              Tested* tested) except -2
cdef int learn_sample(Fields t, const double* xs, object y, double w) except -1
cdef int learn_codes(Fields t, const double* xs, Codes gc, object y, double w, const Tested* tested) except -1
