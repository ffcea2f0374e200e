/* FTM_EXTERN marks the library's public functions. libftmesh is built with
 * -fvisibility=hidden (as libuv is), so only what is marked here leaves the
 * shared object: `nm -D --defined-only libftmesh.so` lists ftm_ names only.
 * Internal functions keep a module prefix (rt_, rtr_, ar2d_, mdl_, train_,
 * ...) and stay hidden. */
#ifndef FTMESH_EXPORT_H
#define FTMESH_EXPORT_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define FTM_EXTERN __attribute__((visibility("default")))
#else
#define FTM_EXTERN
#endif

#endif
