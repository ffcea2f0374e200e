/* Mesh topology and faults: what the machine is and what is broken.
 *
 * Chips are numbered row-major: id = r * cols + c, (0,0) top-left. The four
 * link directions are N (row - 1), E (col + 1), S (row + 1), W (col - 1).
 * A torus adds wrap-around links in every dimension of size >= 3 (a side of
 * 2 already has its one link; a second, parallel wrap link is not modelled).
 * Each link has two directions, each of which can die on its own.
 *
 * Ownership and threads: a mesh owns its arrays (ftm_mesh_init, then
 * ftm_mesh_free; ftm_mesh_copy gives an independent one). Reading a mesh
 * from several threads is safe; the fault functions write it.
 */
#ifndef FTMESH_MESH_H
#define FTMESH_MESH_H

#include "ftmesh/export.h"

#include <stdint.h>

typedef enum { FTM_DIR_N = 0, FTM_DIR_E = 1, FTM_DIR_S = 2, FTM_DIR_W = 3 } ftm_dir;
#define FTM_NDIRS 4
#define FTM_MESH_MIN_CHIPS 1
#define FTM_MESH_MAX_SIDE 64

typedef struct ftm_mesh {
    int rows, cols;
    int torus;                 /* 1: wrap-around links */
    int nchips;                /* rows * cols */
    unsigned char *chip_dead;  /* [nchips] 1 = dead */
    unsigned char *link_dead;  /* [nchips * 4] directed link leaving chip in dir */
} ftm_mesh;

/* "N", "E", "S", "W". */
FTM_EXTERN const char *ftm_mesh_dir_name(int d);
static inline int ftm_dir_opposite(int d) { return (d + 2) & 3; }

/* Sizes 1x1 .. 64x64 (1x1: one chip, no links, for one-chip training).
 * On error nothing is allocated. */
FTM_EXTERN int ftm_mesh_init(ftm_mesh *m, int rows, int cols, int torus);
FTM_EXTERN void ftm_mesh_free(ftm_mesh *m);
/* Deep copy into an uninitialised dst. */
FTM_EXTERN int ftm_mesh_copy(ftm_mesh *dst, const ftm_mesh *src);
/* 1 when a and b have the same shape, wrap and faults (chips and links). */
FTM_EXTERN int ftm_mesh_same(const ftm_mesh *a, const ftm_mesh *b);

static inline int ftm_mesh_chip(const ftm_mesh *m, int r, int c) { return r * m->cols + c; }
static inline int ftm_mesh_row(const ftm_mesh *m, int id) { return id / m->cols; }
static inline int ftm_mesh_col(const ftm_mesh *m, int id) { return id % m->cols; }
static inline int ftm_mesh_alive(const ftm_mesh *m, int id) { return !m->chip_dead[id]; }

/* Neighbour of chip in direction d, or -1 (edge of an open mesh, or d not
 * an FTM_DIR_*). */
FTM_EXTERN int ftm_mesh_neighbor(const ftm_mesh *m, int chip, int d);
/* 1 when the directed link chip->neighbour(d) exists and is usable: both
 * chips alive and that direction of the link not failed. */
FTM_EXTERN int ftm_mesh_link_live(const ftm_mesh *m, int chip, int d);
/* 1 when the link chip <-> neighbour(d) is live in both directions; *nb
 * (if not NULL) gets the neighbour, or -1. */
FTM_EXTERN int ftm_mesh_link_both(const ftm_mesh *m, int chip, int d, int *nb);
/* Failed links between two live chips, a link dead both ways counted
 * once; *oneway (may be NULL): how many of them are dead one way only. */
FTM_EXTERN int ftm_mesh_dead_links(const ftm_mesh *m, int *oneway);
/* Direction from a to its neighbour b, or -1 if they are not neighbours. */
FTM_EXTERN int ftm_mesh_dir_to(const ftm_mesh *m, int a, int b);
FTM_EXTERN int ftm_mesh_healthy_count(const ftm_mesh *m);
/* Lower bound on the detour edges of any ring over the healthy chips: with
 * the checkerboard colouring (row + col) % 2, a one-hop edge joins two
 * colours, so a ring needs at least |black - white| edges of several hops
 * (Itai, Papadimitriou, Szwarcfiter 1982 use the same count). A torus with
 * a wrapping side of odd length is not two-coloured: the bound is 0; so
 * is it with one healthy chip (its ring has no edge). */
FTM_EXTERN int ftm_mesh_detour_lower_bound(const ftm_mesh *m);

/* Faults. Each returns 0, FTM_ERANGE (coordinates outside the mesh) or
 * FTM_ENOTNEIGHBOR (link between non-neighbours); on error nothing changes. */
FTM_EXTERN int ftm_mesh_fail_chip(ftm_mesh *m, int r, int c);
/* The same by chip id (0 <= id < nchips, else FTM_ERANGE): marks a chip
 * that died during a run before its rings are rebuilt. */
FTM_EXTERN int ftm_mesh_fail_chip_id(ftm_mesh *m, int id);
/* The 2x2 host whose top-left chip is (r,c); on a torus it may wrap
 * where a side wraps (3 chips or more: ftm_mesh_neighbor). */
FTM_EXTERN int ftm_mesh_fail_host(ftm_mesh *m, int r, int c);
/* 1 when that host fits on m (ftm_mesh_fail_host takes it), else 0. */
FTM_EXTERN int ftm_mesh_host_fits(const ftm_mesh *m, int r, int c);
/* 1 when chip (r,c) is one of the host whose top-left chip is (hr,hc):
 * rows hr and hr + 1, columns hc and hc + 1, wrapping on a torus. */
FTM_EXTERN int ftm_mesh_host_has(const ftm_mesh *m, int hr, int hc, int r, int c);
/* Kill link (r,c)-(r2,c2) both ways, or only (r,c)->(r2,c2) if oneway. */
FTM_EXTERN int ftm_mesh_fail_link(ftm_mesh *m, int r, int c, int r2, int c2, int oneway);
/* Kill k healthy chips drawn reproducibly from seed. FTM_ERANGE if k is
 * negative or not below the number of healthy chips. */
FTM_EXTERN int ftm_mesh_fail_random(ftm_mesh *m, int k, uint64_t seed);

/* Checks that the healthy chips can all reach each other over live links.
 * Returns 0, FTM_EALLDEAD, or FTM_EPARTITION with *a and *b set to two
 * healthy chips that cannot reach each other (a can't reach b). */
FTM_EXTERN int ftm_mesh_check_connected(const ftm_mesh *m, int *a, int *b);

/* Hop distances over live directed links from src (dist[i] = -1 when
 * unreachable); with reverse=1, distances *to* src. dist has nchips
 * entries; queue is scratch of nchips ints (or NULL to allocate). */
FTM_EXTERN int ftm_mesh_bfs(const ftm_mesh *m, int src, int reverse, int *dist, int *queue);

/* Parsers for command-line text. Each returns 0 or FTM_EINVAL (malformed).
 * "8x8" -> rows, cols; "R,C"; "R,C-R2,C2" (both ways) or "R,C>R2,C2". */
FTM_EXTERN int ftm_mesh_parse_size(const char *s, int *rows, int *cols);
FTM_EXTERN int ftm_mesh_parse_coord(const char *s, int *r, int *c);
FTM_EXTERN int ftm_mesh_parse_link(const char *s, int *r, int *c, int *r2, int *c2, int *oneway);

#endif
