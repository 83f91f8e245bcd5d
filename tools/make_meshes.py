#!/usr/bin/env python3
"""Writes the geometry files under meshes/ (small, kept in git; rerun to regenerate).

  lshape.off      2-D: the unit square without its upper right quarter (area 0.75)
  plate_hole.off  2-D: the square [-1, 1]^2 with a circular hole of radius 0.3 (a 48-gon)
  star.off        2-D: a five-pointed star (outer radius 1, inner 0.4)
  blob.off        3-D: a closed, star-shaped bumpy sphere around (0.5, 0.5, 0.5), 320 triangles

2-D files are OFF triangle soups in the plane z = 0 (Tessera merges the faces and takes the
region's boundary as the polygon); the 3-D file is a closed, outward-oriented triangle surface.
Usage: tools/make_meshes.py [--out meshes]
"""
import argparse
import math
import os

import numpy as np


def write_off(path, vertices, faces, comment):
    with open(path, "w") as f:
        f.write(f"OFF\n# {comment}\n{len(vertices)} {len(faces)} 0\n")
        for v in vertices:
            f.write(" ".join(f"{c:.17g}" for c in v) + "\n")
        for face in faces:
            f.write(f"{len(face)} " + " ".join(str(i) for i in face) + "\n")


def planar(points):
    return [(x, y, 0.0) for x, y in points]


def lshape():
    # Six corners, split into two rectangles = four triangles, all counterclockwise.
    v = [(0, 0), (1, 0), (1, 0.5), (0.5, 0.5), (0.5, 1), (0, 1), (0, 0.5)]
    faces = [(0, 1, 2), (0, 2, 3), (0, 3, 6), (6, 3, 4), (6, 4, 5)]
    return planar(v), faces


def plate_hole(sides=48, radius=0.3):
    # A ring of quads between the hole and the square's boundary projected radially: each hole
    # vertex pairs with the point where its ray meets the square (corners added explicitly).
    angles = [2 * math.pi * k / sides for k in range(sides)]
    inner = [(radius * math.cos(a), radius * math.sin(a)) for a in angles]
    outer = []
    for a in angles:
        c, s = math.cos(a), math.sin(a)
        t = 1.0 / max(abs(c), abs(s))
        outer.append((t * c, t * s))
    vertices = planar(inner + outer)
    faces = []
    for k in range(sides):
        k1 = (k + 1) % sides
        faces.append((k, sides + k, sides + k1))
        faces.append((k, sides + k1, k1))
    return vertices, faces


def star(points=5, outer=1.0, inner=0.4):
    v = [(0.0, 0.0)]
    for k in range(2 * points):
        r = outer if k % 2 == 0 else inner
        a = math.pi / 2 + math.pi * k / points
        v.append((r * math.cos(a), r * math.sin(a)))
    n = 2 * points
    faces = [(0, 1 + k, 1 + (k + 1) % n) for k in range(n)]
    return planar(v), faces


def icosphere(levels):
    t = (1 + math.sqrt(5)) / 2
    v = [
        (-1, t, 0),
        (1, t, 0),
        (-1, -t, 0),
        (1, -t, 0),
        (0, -1, t),
        (0, 1, t),
        (0, -1, -t),
        (0, 1, -t),
        (t, 0, -1),
        (t, 0, 1),
        (-t, 0, -1),
        (-t, 0, 1),
    ]
    v = [np.array(p, float) / np.linalg.norm(p) for p in v]
    f = [
        (0, 11, 5),
        (0, 5, 1),
        (0, 1, 7),
        (0, 7, 10),
        (0, 10, 11),
        (1, 5, 9),
        (5, 11, 4),
        (11, 10, 2),
        (10, 7, 6),
        (7, 1, 8),
        (3, 9, 4),
        (3, 4, 2),
        (3, 2, 6),
        (3, 6, 8),
        (3, 8, 9),
        (4, 9, 5),
        (2, 4, 11),
        (6, 2, 10),
        (8, 6, 7),
        (9, 8, 1),
    ]
    for _ in range(levels):
        middle = {}

        def mid(a, b):
            key = (min(a, b), max(a, b))
            if key not in middle:
                p = v[a] + v[b]
                v.append(p / np.linalg.norm(p))
                middle[key] = len(v) - 1
            return middle[key]

        f = [
            q
            for a, b, c in f
            for q in (
                (a, mid(a, b), mid(c, a)),
                (b, mid(b, c), mid(a, b)),
                (c, mid(c, a), mid(b, c)),
                (mid(a, b), mid(b, c), mid(c, a)),
            )
        ]
    return v, f


def blob():
    unit, faces = icosphere(2)
    vertices = []
    for p in unit:
        x, y, z = p
        r = 0.4 * (1 + 0.15 * x * x - 0.1 * z + 0.08 * x * y)  # positive: stays star-shaped
        vertices.append(tuple(0.5 + r * p))
    return vertices, faces


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "meshes"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    shapes = {
        "lshape.off": (lshape(), "L-shaped domain: [0,1]^2 without (0.5,1]^2; area 0.75"),
        "plate_hole.off": (plate_hole(), "plate [-1,1]^2 with a hole of radius 0.3 (48-gon)"),
        "star.off": (star(), "five-pointed star, radii 1 and 0.4"),
        "blob.off": (blob(), "closed bumpy sphere around (0.5,0.5,0.5), 320 triangles"),
    }
    for name, ((vertices, faces), comment) in shapes.items():
        write_off(
            os.path.join(args.out, name),
            vertices,
            faces,
            comment + "; made by tools/make_meshes.py",
        )
        print(f"{name}: {len(vertices)} vertices, {len(faces)} faces")


if __name__ == "__main__":
    main()
