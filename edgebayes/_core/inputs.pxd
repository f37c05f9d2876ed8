# The compiled core's reading of ``x``: shared by every compiled learner (see inputs.pyx).

cdef double* read_x(object x, Py_ssize_t d, double limit, bint learning, Py_ssize_t* n) except NULL
cdef bint any_nan(const double* xs, Py_ssize_t d)
