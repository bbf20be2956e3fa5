#!/usr/bin/env python3
"""Writes the hwloc XML topologies the topology tests load (PGS_TOPOLOGY_XML).

Run from anywhere: python3 tests/data/make_topologies.py
The files are committed; rerun only after changing the layouts below, and
check them with `lstopo --if xml --input <file> -`.

two_socket_8gpu_4nic.xml
    2 packages, each one NUMA node with 4 cores (PUs 0-3, 4-7).
    Package 0, host bridge 0000:[00-1f]:
      switch 0000:01:00.0: GPUs 0000:03:00.0 0000:04:00.0, NIC mlx5_0/ib0 0000:05:00.0
      switch 0000:10:00.0: GPUs 0000:12:00.0 0000:13:00.0, NIC mlx5_1/ib1 0000:14:00.0
      root port 0000:00:1c.0: Ethernet eno1 0000:1f:00.0 (no OpenFabrics device)
    Package 1, host bridge 0000:[80-8f]:
      switch 0000:81:00.0: GPUs 0000:83:00.0 0000:84:00.0, NIC mlx5_2/ib2 0000:85:00.0
    Package 1, host bridge 0000:[90-9f]:
      switch 0000:91:00.0: GPUs 0000:93:00.0 0000:94:00.0
      root port 0000:90:1c.0: NIC mlx5_3/ib3 0000:9f:00.0 (same host bridge, not the switch)
    Every GPU has cudaN and nvmlN OS devices; nvmlN carries the UUID
    GPU-<N><hex digit>5c7d1e-0b2f-4e6a-9d3c-7f10a2b3c4d<N>.

one_socket_4gpu_nonic.xml
    1 package, 2 NUMA nodes (cores 0-3 and 4-7), 4 NVIDIA GPUs as bare PCI
    devices (no CUDA/NVML OS devices, as hwloc without its GPU plugins sees
    them), two per NUMA node, listed out of bus order; no NIC at all.
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))


class Writer:
    def __init__(self):
        self.lines = []
        self.gp = 0

    def next_gp(self):
        self.gp += 1
        return self.gp

    def open(self, depth, attrs, leaf=False):
        text = " ".join(f'{k}="{v}"' for k, v in attrs)
        self.lines.append("  " * depth + f"<object {text}" + ("/>" if leaf else ">"))

    def close(self, depth):
        self.lines.append("  " * depth + "</object>")

    def info(self, depth, name, value):
        self.lines.append("  " * depth + f'<info name="{name}" value="{value}"/>')


def mask(bits):
    value = 0
    for b in bits:
        value |= 1 << b
    return f"0x{value:08x}"


def cpu_attrs(w, kind, cpus, nodes, os_index=None):
    attrs = [("type", kind)]
    if os_index is not None:
        attrs.append(("os_index", os_index))
    attrs += [("cpuset", mask(cpus)), ("complete_cpuset", mask(cpus)),
              ("nodeset", mask(nodes)), ("complete_nodeset", mask(nodes)),
              ("gp_index", w.next_gp())]
    return attrs


def numa(w, depth, os_index, cpus):
    attrs = cpu_attrs(w, "NUMANode", cpus, [os_index], os_index)
    attrs.append(("local_memory", str(64 << 30)))
    w.open(depth, attrs, leaf=True)


def cores(w, depth, cpus, node):
    for cpu in cpus:
        w.open(depth, cpu_attrs(w, "Core", [cpu], [node], cpu))
        w.open(depth + 1, cpu_attrs(w, "PU", [cpu], [node], cpu), leaf=True)
        w.close(depth)


def host_bridge(w, depth, bus_range):
    w.open(depth, [("type", "Bridge"), ("gp_index", w.next_gp()), ("bridge_type", "0-1"),
                   ("depth", 0), ("bridge_pci", f"0000:[{bus_range}]")])


def pci_bridge(w, depth, busid, bus_range, bdepth, ids="10b5:8747"):
    w.open(depth, [("type", "Bridge"), ("gp_index", w.next_gp()), ("bridge_type", "1-1"),
                   ("depth", bdepth), ("bridge_pci", f"0000:[{bus_range}]"),
                   ("pci_busid", busid), ("pci_type", f"0604 [{ids}] [{ids}] ca"),
                   ("pci_link_speed", "15.753846")])


def pci_dev(w, depth, busid, cls, ids, leaf=False):
    w.open(depth, [("type", "PCIDev"), ("gp_index", w.next_gp()), ("pci_busid", busid),
                   ("pci_type", f"{cls} [{ids}] [{ids}] a1"), ("pci_link_speed", "31.507692")],
           leaf=leaf)


def osdev(w, depth, name, osdev_type, infos, subtype=None):
    attrs = [("type", "OSDev"), ("gp_index", w.next_gp()), ("name", name)]
    if subtype:
        attrs.append(("subtype", subtype))
    attrs.append(("osdev_type", osdev_type))
    w.open(depth, attrs, leaf=not infos)
    for k, v in infos:
        w.info(depth + 1, k, v)
    if infos:
        w.close(depth)


def uuid(n):
    return f"GPU-{n}{'abcdef01'[n]}5c7d1e-0b2f-4e6a-9d3c-7f10a2b3c4d{n}"


def gpu(w, depth, busid, n, with_osdevs=True):
    pci_dev(w, depth, busid, "0302", "10de:2330", leaf=not with_osdevs)
    if with_osdevs:
        osdev(w, depth + 1, f"cuda{n}", 5,
              [("Backend", "CUDA"), ("GPUVendor", "NVIDIA Corporation"),
               ("GPUModel", "NVIDIA H100 80GB HBM3"), ("CUDAGlobalMemorySize", "83295872")],
              subtype="CUDA")
        osdev(w, depth + 1, f"nvml{n}", 1,
              [("Backend", "NVML"), ("GPUVendor", "NVIDIA Corporation"),
               ("GPUModel", "NVIDIA H100 80GB HBM3"), ("NVIDIAUUID", uuid(n))],
              subtype="NVML")
        w.close(depth)


def mlx5(w, depth, busid, n):
    pci_dev(w, depth, busid, "0207", "15b3:101b")
    osdev(w, depth + 1, f"ib{n}", 2, [("Address", f"00:00:10:29:fe:80:00:00:00:00:00:00:b8:3f:d2:03:00:0{n}:aa:1{n}"), ("Port", "1")])
    osdev(w, depth + 1, f"mlx5_{n}", 3,
          [("NodeGUID", f"b83f:d203:000{n}:aa1{n}"), ("SysImageGUID", f"b83f:d203:000{n}:aa1{n}"),
           ("Port1State", "4"), ("Port1LID", f"0x{n + 1:x}"), ("Port1LMC", "0"),
           ("Port1GID0", f"fe80:0000:0000:0000:b83f:d203:000{n}:aa1{n}")], subtype="OpenFabrics")
    w.close(depth)


def switch_with(w, depth, up, down_bus, items):
    """A PCIe switch: upstream port `up`, one downstream port per item."""
    first = int(down_bus, 16)
    pci_bridge(w, depth, up, f"{first:02x}-{first + len(items):02x}", 1)
    for i, (kind, busid, n) in enumerate(items):
        pci_bridge(w, depth + 1, f"0000:{first:02x}:{i:02x}.0", f"{first + 1 + i:02x}-{first + 1 + i:02x}", 2)
        if kind == "gpu":
            gpu(w, depth + 2, busid, n)
        else:
            mlx5(w, depth + 2, busid, n)
        w.close(depth + 1)
    w.close(depth)


def header(w, cpus, nodes, host):
    w.lines += ['<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
                '<topology version="2.0">']
    attrs = cpu_attrs(w, "Machine", cpus, nodes, 0)
    attrs[4:4] = [("allowed_cpuset", mask(cpus))]
    attrs[7:7] = [("allowed_nodeset", mask(nodes))]
    w.open(1, attrs)
    for k, v in [("Backend", "Linux"), ("OSName", "Linux"), ("HostName", host),
                 ("Architecture", "x86_64"), ("hwlocVersion", "2.9.0")]:
        w.info(2, k, v)


def footer(w):
    w.close(1)
    w.lines.append("</topology>")


def two_socket():
    w = Writer()
    header(w, range(8), [0, 1], "gpunode-a")
    # package 0
    w.open(2, cpu_attrs(w, "Package", range(4), [0], 0))
    numa(w, 3, 0, range(4))
    cores(w, 3, range(4), 0)
    host_bridge(w, 3, "00-1f")
    switch_with(w, 4, "0000:01:00.0", "02", [("gpu", "0000:03:00.0", 0), ("gpu", "0000:04:00.0", 1),
                                            ("nic", "0000:05:00.0", 0)])
    switch_with(w, 4, "0000:10:00.0", "11", [("gpu", "0000:12:00.0", 2), ("gpu", "0000:13:00.0", 3),
                                            ("nic", "0000:14:00.0", 1)])
    pci_bridge(w, 4, "0000:00:1c.0", "1f-1f", 1, ids="8086:a190")
    pci_dev(w, 5, "0000:1f:00.0", "0200", "8086:1521")
    osdev(w, 6, "eno1", 2, [("Address", "3c:ec:ef:00:00:01")])
    w.close(5)
    w.close(4)
    w.close(3)
    w.close(2)
    # package 1
    w.open(2, cpu_attrs(w, "Package", range(4, 8), [1], 1))
    numa(w, 3, 1, range(4, 8))
    cores(w, 3, range(4, 8), 1)
    host_bridge(w, 3, "80-8f")
    switch_with(w, 4, "0000:81:00.0", "82", [("gpu", "0000:83:00.0", 4), ("gpu", "0000:84:00.0", 5),
                                            ("nic", "0000:85:00.0", 2)])
    w.close(3)
    host_bridge(w, 3, "90-9f")
    switch_with(w, 4, "0000:91:00.0", "92", [("gpu", "0000:93:00.0", 6), ("gpu", "0000:94:00.0", 7)])
    pci_bridge(w, 4, "0000:90:1c.0", "9f-9f", 1, ids="8086:a190")
    mlx5(w, 5, "0000:9f:00.0", 3)
    w.close(4)
    w.close(3)
    w.close(2)
    footer(w)
    return w.lines


def one_socket_nonic():
    w = Writer()
    header(w, range(8), [0, 1], "gpunode-b")
    w.open(2, cpu_attrs(w, "Package", range(8), [0, 1], 0))
    for node, cpus in ((0, range(4)), (1, range(4, 8))):
        w.open(3, cpu_attrs(w, "Group", cpus, [node]))
        numa(w, 4, node, cpus)
        cores(w, 4, cpus, node)
        host_bridge(w, 4, "40-4f" if node == 0 else "00-3f")
        # out of bus order on purpose: the library sorts by bus id
        for busid in (("0000:4b:00.0", "0000:41:00.0") if node == 0 else ("0000:21:00.0", "0000:0a:00.0")):
            gpu(w, 5, busid, 0, with_osdevs=False)
        w.close(4)
        w.close(3)
    w.close(2)
    footer(w)
    return w.lines


for name, lines in (("two_socket_8gpu_4nic.xml", two_socket()),
                    ("one_socket_4gpu_nonic.xml", one_socket_nonic())):
    with open(os.path.join(HERE, name), "w") as f:
        f.write("\n".join(lines) + "\n")
