terasim-pir 1
model tiny
layers 4
sequence 32
devices 4
batch 1
shape strategy=gpipe dp=1 pp=2 tp=2 v=1
group tp.d0.s0 0,1
group tp.d0.s1 2,3
# device 0
op F.s0.m0.t0-32.l0.attn.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARF.s0.m0.t0-32.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpf.l0.attn.m0.t0-32 bytes=4096
op F.s0.m0.t0-32.l0.mlp.r0 FWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARF.s0.m0.t0-32.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpf.l0.mlp.m0.t0-32 bytes=4096
op F.s0.m0.t0-32.l1.attn.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARF.s0.m0.t0-32.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpf.l1.attn.m0.t0-32 bytes=4096
op F.s0.m0.t0-32.l1.mlp.r0 FWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARF.s0.m0.t0-32.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpf.l1.mlp.m0.t0-32 bytes=4096
op SF.s0.m0.t0-32.r0 SEND dev=0 stream=send stage=0 mb=0 rows=1 tokens=0-32 peer=2 tensor=act.l2.m0.t0-32 bytes=4096 after=ARF.s0.m0.t0-32.l1.mlp.r0
op RB.s0.m0.t0-32.r0 RECV dev=0 stream=recv stage=0 mb=0 rows=1 tokens=0-32 peer=2 tensor=grad.l2.m0.t0-32 bytes=4096
op BCB.s0.m0.t0-32.r0 BROADCAST dev=0 stream=recv stage=0 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 peer=0 tensor=grad.l2.m0.t0-32 bytes=4096
op B.s0.m0.t0-32.l1.mlp.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s0 after=BCB.s0.m0.t0-32.r0
op ARB.s0.m0.t0-32.l1.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpb.l1.mlp.m0.t0-32 bytes=4096
op B.s0.m0.t0-32.l1.attn.r0 BWD dev=0 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARB.s0.m0.t0-32.l1.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpb.l1.attn.m0.t0-32 bytes=4096
op B.s0.m0.t0-32.l0.mlp.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARB.s0.m0.t0-32.l0.mlp.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpb.l0.mlp.m0.t0-32 bytes=4096
op B.s0.m0.t0-32.l0.attn.r0 BWD dev=0 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARB.s0.m0.t0-32.l0.attn.r0 ALLREDUCE dev=0 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpb.l0.attn.m0.t0-32 bytes=4096
op OPT.s0.d0.r0 OPTIMIZER dev=0 stream=compute stage=0 layers=0-2
# device 1
op F.s0.m0.t0-32.l0.attn.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARF.s0.m0.t0-32.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpf.l0.attn.m0.t0-32 bytes=4096
op F.s0.m0.t0-32.l0.mlp.r1 FWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARF.s0.m0.t0-32.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpf.l0.mlp.m0.t0-32 bytes=4096
op F.s0.m0.t0-32.l1.attn.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARF.s0.m0.t0-32.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpf.l1.attn.m0.t0-32 bytes=4096
op F.s0.m0.t0-32.l1.mlp.r1 FWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARF.s0.m0.t0-32.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpf.l1.mlp.m0.t0-32 bytes=4096
op BCB.s0.m0.t0-32.r1 BROADCAST dev=1 stream=recv stage=0 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 peer=0 tensor=grad.l2.m0.t0-32 bytes=4096
op B.s0.m0.t0-32.l1.mlp.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s0 after=BCB.s0.m0.t0-32.r1
op ARB.s0.m0.t0-32.l1.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpb.l1.mlp.m0.t0-32 bytes=4096
op B.s0.m0.t0-32.l1.attn.r1 BWD dev=1 stream=compute stage=0 layers=1-2 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARB.s0.m0.t0-32.l1.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=1-2 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpb.l1.attn.m0.t0-32 bytes=4096
op B.s0.m0.t0-32.l0.mlp.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARB.s0.m0.t0-32.l0.mlp.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpb.l0.mlp.m0.t0-32 bytes=4096
op B.s0.m0.t0-32.l0.attn.r1 BWD dev=1 stream=compute stage=0 layers=0-1 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s0
op ARB.s0.m0.t0-32.l0.attn.r1 ALLREDUCE dev=1 stream=compute stage=0 layers=0-1 mb=0 rows=1 tokens=0-32 group=tp.d0.s0 tensor=tpb.l0.attn.m0.t0-32 bytes=4096
op OPT.s0.d0.r1 OPTIMIZER dev=1 stream=compute stage=0 layers=0-2
# device 2
op RF.s1.m0.t0-32.r0 RECV dev=2 stream=recv stage=1 mb=0 rows=1 tokens=0-32 peer=0 tensor=act.l2.m0.t0-32 bytes=4096
op BCF.s1.m0.t0-32.r0 BROADCAST dev=2 stream=recv stage=1 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 peer=2 tensor=act.l2.m0.t0-32 bytes=4096
op F.s1.m0.t0-32.l2.attn.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s1 after=BCF.s1.m0.t0-32.r0
op ARF.s1.m0.t0-32.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpf.l2.attn.m0.t0-32 bytes=4096
op F.s1.m0.t0-32.l2.mlp.r0 FWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARF.s1.m0.t0-32.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpf.l2.mlp.m0.t0-32 bytes=4096
op F.s1.m0.t0-32.l3.attn.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARF.s1.m0.t0-32.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpf.l3.attn.m0.t0-32 bytes=4096
op F.s1.m0.t0-32.l3.mlp.r0 FWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARF.s1.m0.t0-32.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpf.l3.mlp.m0.t0-32 bytes=4096
op B.s1.m0.t0-32.l3.mlp.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARB.s1.m0.t0-32.l3.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpb.l3.mlp.m0.t0-32 bytes=4096
op B.s1.m0.t0-32.l3.attn.r0 BWD dev=2 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARB.s1.m0.t0-32.l3.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpb.l3.attn.m0.t0-32 bytes=4096
op ARB.s1.m0.t0-32.l2.mlp.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpb.l2.mlp.m0.t0-32 bytes=4096
op B.s1.m0.t0-32.l2.mlp.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op B.s1.m0.t0-32.l2.attn.r0 BWD dev=2 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARB.s1.m0.t0-32.l2.attn.r0 ALLREDUCE dev=2 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpb.l2.attn.m0.t0-32 bytes=4096
op SB.s1.m0.t0-32.r0 SEND dev=2 stream=send stage=1 mb=0 rows=1 tokens=0-32 peer=0 tensor=grad.l2.m0.t0-32 bytes=4096 after=ARB.s1.m0.t0-32.l2.attn.r0
op OPT.s1.d0.r0 OPTIMIZER dev=2 stream=compute stage=1 layers=2-4
# device 3
op BCF.s1.m0.t0-32.r1 BROADCAST dev=3 stream=recv stage=1 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 peer=2 tensor=act.l2.m0.t0-32 bytes=4096
op F.s1.m0.t0-32.l2.attn.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s1 after=BCF.s1.m0.t0-32.r1
op ARF.s1.m0.t0-32.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpf.l2.attn.m0.t0-32 bytes=4096
op F.s1.m0.t0-32.l2.mlp.r1 FWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARF.s1.m0.t0-32.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpf.l2.mlp.m0.t0-32 bytes=4096
op F.s1.m0.t0-32.l3.attn.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARF.s1.m0.t0-32.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpf.l3.attn.m0.t0-32 bytes=4096
op F.s1.m0.t0-32.l3.mlp.r1 FWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARF.s1.m0.t0-32.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpf.l3.mlp.m0.t0-32 bytes=4096
op B.s1.m0.t0-32.l3.mlp.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARB.s1.m0.t0-32.l3.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpb.l3.mlp.m0.t0-32 bytes=4096
op B.s1.m0.t0-32.l3.attn.r1 BWD dev=3 stream=compute stage=1 layers=3-4 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARB.s1.m0.t0-32.l3.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=3-4 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpb.l3.attn.m0.t0-32 bytes=4096
op B.s1.m0.t0-32.l2.mlp.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=mlp mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARB.s1.m0.t0-32.l2.mlp.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpb.l2.mlp.m0.t0-32 bytes=4096
op B.s1.m0.t0-32.l2.attn.r1 BWD dev=3 stream=compute stage=1 layers=2-3 part=attn mb=0 rows=1 tokens=0-32 group=tp.d0.s1
op ARB.s1.m0.t0-32.l2.attn.r1 ALLREDUCE dev=3 stream=compute stage=1 layers=2-3 mb=0 rows=1 tokens=0-32 group=tp.d0.s1 tensor=tpb.l2.attn.m0.t0-32 bytes=4096
op OPT.s1.d0.r1 OPTIMIZER dev=3 stream=compute stage=1 layers=2-4
