"""A NumPy implementation of rlx's Gaussian splatting semantics (docs/splatting.md), the peer
bench/splat/run.py times rlx against: projection vectorised over Gaussians, binning by a stable
lexsort on (tile, depth), rasterisation vectorised within each 16x16 tile (a Python loop over
tiles), and the backward pass of all three by hand."""
import numpy as np

TILE = 16


def quat_to_rot(q):
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1)], 1)


def project(means, scales, quats, view, K, width, height, near=0.01):
    Wr, t = view[:3, :3], view[:3, 3]
    p = means @ Wr.T + t
    x, y, z = p[:, 0], p[:, 1], p[:, 2]
    qn = np.linalg.norm(quats, axis=1, keepdims=True)
    qu = quats / qn
    R = quat_to_rot(qu)
    M = R * scales[:, None, :]
    Sc = Wr @ (M @ M.transpose(0, 2, 1)) @ Wr.T
    fx, fy, cx, cy = K
    zs = np.where(z >= near, z, 1.0)
    J = np.zeros((len(z), 2, 3), means.dtype)
    J[:, 0, 0] = fx / zs
    J[:, 0, 2] = -fx * x / zs ** 2
    J[:, 1, 1] = fy / zs
    J[:, 1, 2] = -fy * y / zs ** 2
    cov = J @ Sc @ J.transpose(0, 2, 1)
    a, b, c = cov[:, 0, 0] + 0.3, cov[:, 0, 1], cov[:, 1, 1] + 0.3
    det = a * c - b * b
    ok = (z >= near) & (det > 0)
    dets = np.where(ok, det, 1.0)
    mid = 0.5 * (a + c)
    lam = mid + np.sqrt(np.maximum(0.1, mid * mid - det))
    radius = np.where(ok, np.ceil(3 * np.sqrt(np.maximum(lam, 0))), 0).astype(np.int64)
    mx, my = fx * x / zs + cx, fy * y / zs + cy
    tx, ty = (width + TILE - 1) // TILE, (height + TILE - 1) // TILE
    x0 = np.clip(np.floor((mx - radius) / TILE), 0, tx).astype(np.int64)
    x1 = np.clip(np.floor((mx + radius + TILE - 1) / TILE), 0, tx).astype(np.int64)
    y0 = np.clip(np.floor((my - radius) / TILE), 0, ty).astype(np.int64)
    y1 = np.clip(np.floor((my + radius + TILE - 1) / TILE), 0, ty).astype(np.int64)
    ok &= (x1 > x0) & (y1 > y0)
    conic = np.stack([c / dets, -b / dets, a / dets], 1) * ok[:, None]
    saved = dict(x=x, y=y, z=zs, qu=qu, qn=qn, R=R, M=M, Sc=Sc, J=J, a=a, b=b, c=c, det=dets,
                 ok=ok, rect=(x0, y0, x1, y1))
    return np.stack([mx, my], 1) * ok[:, None], conic, z * ok, ok, saved


def tile_bin(ok, depths, rect, width, height):
    x0, y0, x1, y1 = (r[ok] for r in rect)
    ids = np.nonzero(ok)[0]
    wx = x1 - x0
    counts = wx * (y1 - y0)
    g = np.repeat(np.arange(len(ids)), counts)
    local = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    tiles_x = (width + TILE - 1) // TILE
    tile = (y0[g] + local // wx[g]) * tiles_x + x0[g] + local % wx[g]
    gid = ids[g]
    order = np.lexsort((gid, depths[gid], tile))
    ntiles = tiles_x * ((height + TILE - 1) // TILE)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(tile, minlength=ntiles))])
    return offsets, gid[order]


def _tile_pixels(t, width, height):
    tiles_x = (width + TILE - 1) // TILE
    x0, y0 = (t % tiles_x) * TILE, (t // tiles_x) * TILE
    xs = np.arange(x0, min(x0 + TILE, width))
    ys = np.arange(y0, min(y0 + TILE, height))
    px, py = np.meshgrid(xs + 0.5, ys + 0.5)
    return ys, xs, px.ravel(), py.ravel()


def _tile_alpha(ids, means2d, conics, opac, px, py):
    dx = means2d[ids, 0][:, None] - px[None, :]
    dy = means2d[ids, 1][:, None] - py[None, :]
    A, B, C = conics[ids, 0][:, None], conics[ids, 1][:, None], conics[ids, 2][:, None]
    sigma = 0.5 * (A * dx * dx + C * dy * dy) + B * dx * dy
    vis = np.exp(-np.maximum(sigma, 0))
    raw = opac[ids][:, None] * vis
    alpha = np.minimum(0.99, raw)
    alpha[(sigma < 0) | (alpha < 1 / 255)] = 0
    one_minus = 1 - alpha
    valid = np.cumprod(one_minus, 0) > 1e-4  # a prefix: stop before T would reach 1e-4
    alpha = np.where(valid, alpha, 0)
    keep = np.where(valid, one_minus, 1)
    T = np.concatenate([np.ones_like(keep[:1]), np.cumprod(keep, 0)[:-1]], 0)
    return dict(dx=dx, dy=dy, sigma=sigma, vis=vis, raw=raw, alpha=alpha, T=T,
                final=np.prod(keep, 0) if len(ids) else np.ones_like(px))


def rasterize(means2d, conics, colors, opac, bg, offsets, ids, width, height):
    image = np.empty((height, width, 3), means2d.dtype)
    final = np.empty((height, width), means2d.dtype)
    for t in range(len(offsets) - 1):
        ys, xs, px, py = _tile_pixels(t, width, height)
        tid = ids[offsets[t]:offsets[t + 1]]
        s = _tile_alpha(tid, means2d, conics, opac, px, py)
        col = (s["alpha"] * s["T"]).T @ colors[tid] + s["final"][:, None] * bg
        image[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1] = col.reshape(len(ys), len(xs), 3)
        final[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1] = s["final"].reshape(len(ys), len(xs))
    return image, final


def rasterize_backward(means2d, conics, colors, opac, bg, offsets, ids, width, height, d_image):
    n = len(opac)
    dm, dc, dcol, dop = (np.zeros((n, 2)), np.zeros((n, 3)), np.zeros((n, 3)), np.zeros(n))
    for t in range(len(offsets) - 1):
        tid = ids[offsets[t]:offsets[t + 1]]
        if len(tid) == 0:
            continue
        ys, xs, px, py = _tile_pixels(t, width, height)
        s = _tile_alpha(tid, means2d, conics, opac, px, py)
        v = d_image[ys[0]:ys[-1] + 1, xs[0]:xs[-1] + 1].reshape(-1, 3)
        w = s["alpha"] * s["T"]
        dcol[tid] += w @ v
        g = colors[tid] @ v.T  # v . c_k per pixel
        gw = g * w
        behind = np.cumsum(gw[::-1], 0)[::-1] - gw + s["final"] * (v @ bg)
        a = s["alpha"]
        d_alpha = np.where(a > 0, g * s["T"] - behind / (1 - a), 0)
        d_alpha = np.where(s["raw"] > 0.99, 0, d_alpha)
        dop[tid] += (s["vis"] * d_alpha).sum(1)
        d_sigma = -a * d_alpha
        dx, dy = s["dx"], s["dy"]
        A, B, C = conics[tid, 0][:, None], conics[tid, 1][:, None], conics[tid, 2][:, None]
        dm[tid, 0] += ((A * dx + B * dy) * d_sigma).sum(1)
        dm[tid, 1] += ((B * dx + C * dy) * d_sigma).sum(1)
        dc[tid, 0] += (0.5 * dx * dx * d_sigma).sum(1)
        dc[tid, 1] += (dx * dy * d_sigma).sum(1)
        dc[tid, 2] += (0.5 * dy * dy * d_sigma).sum(1)
    return dm, dc, dcol, dop


def project_backward(scales, view, K, saved, d_means2d, d_conics):
    s = saved
    ok = s["ok"]
    a, b, c, det = s["a"], s["b"], s["c"], s["det"]
    dA, dB, dC = d_conics[:, 0], d_conics[:, 1], d_conics[:, 2]
    id2 = 1 / (det * det)
    da = (-dA * c * c + dB * b * c - dC * b * b) * id2
    db = (2 * dA * b * c - dB * (det + 2 * b * b) + 2 * dC * a * b) * id2
    dcc = (-dA * b * b + dB * a * b - dC * a * a) * id2
    G = np.stack([np.stack([da, 0.5 * db], -1), np.stack([0.5 * db, dcc], -1)], 1)
    J, Sc = s["J"], s["Sc"]
    dS = J.transpose(0, 2, 1) @ G @ J
    dJ = 2 * G @ J @ Sc
    fx, fy = K[0], K[1]
    x, y, z = s["x"], s["y"], s["z"]
    iz = 1 / z
    dmx, dmy = d_means2d[:, 0], d_means2d[:, 1]
    dx = dJ[:, 0, 2] * (-fx * iz * iz) + dmx * fx * iz
    dy = dJ[:, 1, 2] * (-fy * iz * iz) + dmy * fy * iz
    dz = (dJ[:, 0, 0] * (-fx * iz * iz) + dJ[:, 0, 2] * (2 * fx * x * iz ** 3) +
          dJ[:, 1, 1] * (-fy * iz * iz) + dJ[:, 1, 2] * (2 * fy * y * iz ** 3) -
          dmx * fx * x * iz * iz - dmy * fy * y * iz * iz)
    Wr = view[:3, :3]
    d_means = np.stack([dx, dy, dz], 1) @ Wr
    dsig = Wr.T @ dS @ Wr
    dM = 2 * dsig @ s["M"]
    d_scales = (dM * s["R"]).sum(1)
    dR = dM * scales[:, None, :]
    w, qx, qy, qz = (s["qu"][:, i] for i in range(4))
    r = lambda i, j: dR[:, i, j]
    dq = 2 * np.stack([
        -qz * r(0, 1) + qy * r(0, 2) + qz * r(1, 0) - qx * r(1, 2) - qy * r(2, 0) + qx * r(2, 1),
        qy * r(0, 1) + qz * r(0, 2) + qy * r(1, 0) - 2 * qx * r(1, 1) - w * r(1, 2) + qz * r(2, 0) +
        w * r(2, 1) - 2 * qx * r(2, 2),
        -2 * qy * r(0, 0) + qx * r(0, 1) + w * r(0, 2) + qx * r(1, 0) + qz * r(1, 2) - w * r(2, 0) +
        qz * r(2, 1) - 2 * qy * r(2, 2),
        -2 * qz * r(0, 0) - w * r(0, 1) + qx * r(0, 2) + w * r(1, 0) - 2 * qz * r(1, 1) +
        qy * r(1, 2) + qx * r(2, 0) + qy * r(2, 1)], 1)
    qu = s["qu"]
    d_quats = (dq - qu * (qu * dq).sum(1, keepdims=True)) / s["qn"]
    m = ok[:, None]
    return d_means * m, d_scales * m, d_quats * m


def forward(scene, width, height):
    means2d, conics, depths, ok, saved = project(scene["means"], scene["scales"], scene["quats"],
                                                 scene["viewmat"], scene["intrinsics"], width, height)
    offsets, ids = tile_bin(ok, depths, saved["rect"], width, height)
    image, _ = rasterize(means2d, conics, scene["colors"], scene["opacities"], scene["background"],
                         offsets, ids, width, height)
    return image, (means2d, conics, offsets, ids, saved)


def forward_backward(scene, width, height, weights):
    image, (means2d, conics, offsets, ids, saved) = forward(scene, width, height)
    dm2, dcon, dcol, dop = rasterize_backward(means2d, conics, scene["colors"], scene["opacities"],
                                              scene["background"], offsets, ids, width, height,
                                              weights)
    dmeans, dscales, dquats = project_backward(scene["scales"], scene["viewmat"],
                                               scene["intrinsics"], saved, dm2, dcon)
    return image, (dmeans, dscales, dquats, dop, dcol)
