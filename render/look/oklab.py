"""OKLab in exact integer arithmetic: 8-bit sRGB colours to OKLab and back, and palettes
interpolated in OKLab (palette.space: oklab).

Björn Ottosson's OKLab (https://bottosson.github.io/posts/oklab/): linear sRGB -> LMS by his
matrix M1, a cube root per channel, -> Lab by M2; back by his published inverses of M2 and M1 and
a cube. The sRGB transfer curve is IEC 61966-2-1's: decode c / 12.92 for c <= 0.04045, else
((c + 0.055) / 1.055) ** 2.4; encode 12.92 x for x <= 0.0031308, else 1.055 x ** (1 / 2.4) - 0.055.

Every number is an integer: values are fixed point with FRACTION_BITS fraction bits (ONE = 1.0),
the matrices are Ottosson's 10-decimal coefficients times 10^10, every product is floored, and
the powers are exact integer roots of integer powers (x ** 2.4 = 5th root of x ** 12,
x ** (1 / 2.4) = 12th root of x ** 5, cube roots), each the floor of the true root found by
integer Newton (iroot). No libm call decides a bit, so every machine builds the same table. An
entry is the fixed-point value times 255, rounded half up (floor(v + 1/2)), clamped to 0 .. 255
(a mix of two colours may leave the sRGB gamut: each channel is clamped).
"""

from __future__ import annotations

FRACTION_BITS = 64
ONE = 1 << FRACTION_BITS
SCALE = 10**10  # the matrices' coefficients are integers over SCALE

M1 = (  # linear sRGB -> LMS
    (4122214708, 5363325363, 514459929),
    (2119034982, 6806995451, 1073969566),
    (883024619, 2817188376, 6299787005),
)
M2 = (  # cube-rooted LMS -> Lab
    (2104542553, 7936177850, -40720468),
    (19779984951, -24285922050, 4505937099),
    (259040371, 7827717662, -8086757660),
)
M2_INVERSE = (  # Lab -> cube-rooted LMS
    (10000000000, 3963377774, 2158037573),
    (10000000000, -1055613458, -638541728),
    (10000000000, -894841775, -12914855480),
)
M1_INVERSE = (  # LMS -> linear sRGB
    (40767416621, -33077115913, 2309699292),
    (-12684380046, 26097574011, -3413193965),
    (-41960863, -7034186147, 17076147010),
)

Triple = tuple[int, int, int]


def iroot(value: int, n: int) -> int:
    """floor(value ** (1 / n)) of an integer value >= 0, exactly: integer Newton from above.

    A float gives the first guess only; one Newton step from any guess lands at or above the
    root (the mean of n - 1 guesses and value / guess ** (n - 1) is at least the root), and the
    steps then fall to the floor of the root, where they stop. The answer does not depend on the
    guess."""
    if value < 2:
        return value
    if value.bit_length() < 1000:
        guess = int(float(value) ** (1.0 / n)) + 1
    else:
        guess = 1 << -(-value.bit_length() // n)
    x = ((n - 1) * guess + value // guess ** (n - 1)) // n
    while True:
        y = ((n - 1) * x + value // x ** (n - 1)) // n
        if y >= x:
            return x
        x = y


def product(matrix: tuple[Triple, ...], vector: Triple) -> Triple:
    """matrix @ vector / SCALE, each row floored."""
    return tuple(sum(m * v for m, v in zip(row, vector)) // SCALE for row in matrix)


def decode(channel: int) -> int:
    """An 8-bit sRGB channel (0 .. 255) as linear light, fixed point (floor)."""
    if channel <= 10:  # channel / 255 <= 0.04045: the linear segment
        return channel * 100 * ONE // (255 * 1292)
    # ((channel / 255 + 0.055) / 1.055) ** (12 / 5) = (p / q) ** (12 / 5)
    p, q = 1000 * channel + 14025, 269025
    return iroot(ONE**5 * p**12 // q**12, 5)


def encode(linear: int) -> int:
    """Linear light (fixed point, clamped to 0 .. ONE) as an 8-bit sRGB channel, half up."""
    x = min(max(linear, 0), ONE)
    if x * 10**7 <= 31308 * ONE:  # x <= 0.0031308: 255 * 12.92 * x
        return (2 * 255 * 1292 * x + 100 * ONE) // (200 * ONE)
    root = iroot(x**5 * ONE**7, 12)  # x ** (5 / 12), fixed point
    value = (2 * 255 * (1055 * root - 55 * ONE) + 1000 * ONE) // (2000 * ONE)
    return min(max(value, 0), 255)


def to_oklab(rgb: Triple) -> Triple:
    """(L, a, b) fixed point of an 8-bit sRGB colour."""
    lms = product(M1, tuple(decode(c) for c in rgb))
    return product(M2, tuple(iroot(max(v, 0) * ONE**2, 3) for v in lms))


def from_oklab(lab: Triple) -> Triple:
    """The 8-bit sRGB colour of (L, a, b) fixed point: each channel clamped, rounded half up."""
    cube_roots = product(M2_INVERSE, lab)
    lms = tuple(v**3 // ONE**2 for v in cube_roots)
    return tuple(encode(v) for v in product(M1_INVERSE, lms))


def oklab_ramp(stops: list[Triple], entries: int = 256) -> list[Triple]:
    """`entries` colours through the stops, evenly spaced as the sRGB ramp spaces them (entry i at
    i / (entries - 1), stop j at j / (n - 1)), interpolated linearly in OKLab: entry i between
    stops j and j + 1, r = i * (n - 1) - (entries - 1) * j, takes
    (Lab_j * (entries - 1 - r) + Lab_{j+1} * r) // (entries - 1) per component. An entry on a stop
    is that stop's Lab, and comes back as the stop."""
    labs = [to_oklab(stop) for stop in stops]
    span = entries - 1
    ramp = []
    for i in range(entries):
        j = min(i * (len(stops) - 1) // span, len(stops) - 2)
        r = i * (len(stops) - 1) - span * j
        mixed = tuple((a * (span - r) + b * r) // span for a, b in zip(labs[j], labs[j + 1]))
        ramp.append(from_oklab(mixed))
    return ramp
