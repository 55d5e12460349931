// shapes.hpp: the rows of dftrace/io_calls.def as wrappers. Each file of interposers defines the
// macros of its shapes (DFTRACE_IO_SHAPE_<shape>(cat, symbol, event, types...): the wrapper of
// one row, registered), then includes this header and the table inside extern "C":
//
//   #include "plugins/io/shapes.hpp"
//   #define DFTRACE_IO_CALL DFTRACE_IO_WRAPPER
//   #include "dftrace/io_calls.def"
//
// Every shape another file defines expands to nothing here, so each file makes its own rows.
// A shape ending in _OWN is a function written out in its file: its row only registers it.
#pragma once

#include "plugins/io/interpose.hpp"

#define DFTRACE_IO_UNPAREN(...) __VA_ARGS__
#define DFTRACE_IO_APPLY(shape, ...) shape(__VA_ARGS__)
// The category as a string (never expanded as a macro), the types out of their parentheses.
#define DFTRACE_IO_WRAPPER(cat, symbol, event, shape, cls, bytes, types) \
  DFTRACE_IO_APPLY(DFTRACE_IO_SHAPE_##shape, #cat, symbol, event, DFTRACE_IO_UNPAREN types)

// posix_fd.cpp
#ifndef DFTRACE_IO_SHAPE_OPEN
#define DFTRACE_IO_SHAPE_OPEN(...)
#endif
#ifndef DFTRACE_IO_SHAPE_OPENAT
#define DFTRACE_IO_SHAPE_OPENAT(...)
#endif
#ifndef DFTRACE_IO_SHAPE_CREAT
#define DFTRACE_IO_SHAPE_CREAT(...)
#endif
#ifndef DFTRACE_IO_SHAPE_OPEN_2
#define DFTRACE_IO_SHAPE_OPEN_2(...)
#endif
#ifndef DFTRACE_IO_SHAPE_OPENAT_2
#define DFTRACE_IO_SHAPE_OPENAT_2(...)
#endif
#ifndef DFTRACE_IO_SHAPE_TRANSFER
#define DFTRACE_IO_SHAPE_TRANSFER(...)
#endif
#ifndef DFTRACE_IO_SHAPE_TRANSFER_AT
#define DFTRACE_IO_SHAPE_TRANSFER_AT(...)
#endif
#ifndef DFTRACE_IO_SHAPE_PREAD_CHK
#define DFTRACE_IO_SHAPE_PREAD_CHK(...)
#endif
#ifndef DFTRACE_IO_SHAPE_VECTOR
#define DFTRACE_IO_SHAPE_VECTOR(...)
#endif
#ifndef DFTRACE_IO_SHAPE_VECTOR_AT
#define DFTRACE_IO_SHAPE_VECTOR_AT(...)
#endif
#ifndef DFTRACE_IO_SHAPE_VECTOR_AT2
#define DFTRACE_IO_SHAPE_VECTOR_AT2(...)
#endif
#ifndef DFTRACE_IO_SHAPE_SENDFILE
#define DFTRACE_IO_SHAPE_SENDFILE(...)
#endif
#ifndef DFTRACE_IO_SHAPE_SEEK
#define DFTRACE_IO_SHAPE_SEEK(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FTRUNCATE
#define DFTRACE_IO_SHAPE_FTRUNCATE(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FD_CALL
#define DFTRACE_IO_SHAPE_FD_CALL(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FCNTL
#define DFTRACE_IO_SHAPE_FCNTL(...)
#endif
#ifndef DFTRACE_IO_SHAPE_MMAP
#define DFTRACE_IO_SHAPE_MMAP(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FD_OWN
#define DFTRACE_IO_SHAPE_FD_OWN(...)
#endif
// posix_make.cpp
#ifndef DFTRACE_IO_SHAPE_MAKE_FD
#define DFTRACE_IO_SHAPE_MAKE_FD(...)
#endif
#ifndef DFTRACE_IO_SHAPE_MAKE_PAIR
#define DFTRACE_IO_SHAPE_MAKE_PAIR(...)
#endif
#ifndef DFTRACE_IO_SHAPE_MAKE_TEMP
#define DFTRACE_IO_SHAPE_MAKE_TEMP(...)
#endif
// posix_path.cpp
#ifndef DFTRACE_IO_SHAPE_PATH
#define DFTRACE_IO_SHAPE_PATH(...)
#endif
#ifndef DFTRACE_IO_SHAPE_PATH_OWN
#define DFTRACE_IO_SHAPE_PATH_OWN(...)
#endif
// process_exit.cpp
#ifndef DFTRACE_IO_SHAPE_EXIT_OWN
#define DFTRACE_IO_SHAPE_EXIT_OWN(...)
#endif
// stdio.cpp
#ifndef DFTRACE_IO_SHAPE_FOPEN
#define DFTRACE_IO_SHAPE_FOPEN(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FREOPEN
#define DFTRACE_IO_SHAPE_FREOPEN(...)
#endif
#ifndef DFTRACE_IO_SHAPE_ITEMS
#define DFTRACE_IO_SHAPE_ITEMS(...)
#endif
#ifndef DFTRACE_IO_SHAPE_ITEMS_CHK
#define DFTRACE_IO_SHAPE_ITEMS_CHK(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FSEEKO
#define DFTRACE_IO_SHAPE_FSEEKO(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FTELL
#define DFTRACE_IO_SHAPE_FTELL(...)
#endif
#ifndef DFTRACE_IO_SHAPE_STDIO_OWN
#define DFTRACE_IO_SHAPE_STDIO_OWN(...)
#endif
// stdio_text.cpp
#ifndef DFTRACE_IO_SHAPE_GETC
#define DFTRACE_IO_SHAPE_GETC(...)
#endif
#ifndef DFTRACE_IO_SHAPE_GETCHAR
#define DFTRACE_IO_SHAPE_GETCHAR(...)
#endif
#ifndef DFTRACE_IO_SHAPE_PUTC
#define DFTRACE_IO_SHAPE_PUTC(...)
#endif
#ifndef DFTRACE_IO_SHAPE_PUTCHAR
#define DFTRACE_IO_SHAPE_PUTCHAR(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FGETS
#define DFTRACE_IO_SHAPE_FGETS(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FGETS_CHK
#define DFTRACE_IO_SHAPE_FGETS_CHK(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FPUTS
#define DFTRACE_IO_SHAPE_FPUTS(...)
#endif
#ifndef DFTRACE_IO_SHAPE_GETDELIM
#define DFTRACE_IO_SHAPE_GETDELIM(...)
#endif
#ifndef DFTRACE_IO_SHAPE_UNGETC
#define DFTRACE_IO_SHAPE_UNGETC(...)
#endif
#ifndef DFTRACE_IO_SHAPE_FSETPOS
#define DFTRACE_IO_SHAPE_FSETPOS(...)
#endif
#ifndef DFTRACE_IO_SHAPE_TEXT_OWN
#define DFTRACE_IO_SHAPE_TEXT_OWN(...)
#endif
// hdf5.cpp
#ifndef DFTRACE_IO_SHAPE_H5_CLOSE
#define DFTRACE_IO_SHAPE_H5_CLOSE(...)
#endif
#ifndef DFTRACE_IO_SHAPE_H5_OWN
#define DFTRACE_IO_SHAPE_H5_OWN(...)
#endif

// A row's wrapper, `result symbol params`: its real function (real_<symbol>) and its node
// (node_) found, then the statements `...`; registered.
#define DFTRACE_IO_DEFINE(cat, symbol, event, result, params, ...) \
  result symbol params {                                           \
    DFTRACE_IO_REAL(symbol);                                       \
    DFTRACE_IO_NODE(cat, event);                                   \
    __VA_ARGS__                                                    \
  }                                                                \
  DFTRACE_IO_REGISTER(symbol);
