// SPDX-License-Identifier: GPL-2.0-or-later
//
// NEURON-Fabric low-bit aggregation datapath (Verilog-2005).
//
// One line per cycle: a line of packed G-Binary signs or G-Ternary codes
// (LANES bits, 512 = one 64-byte CXL line), its data-byte enables, and the
// counter bytes those elements own (LANES * 16 bits, the counter area slice
// read from counter memory), in; the updated counter bytes (write), the
// packed read-out (read) and the number of reserved ternary codes, out.
// The datapath holds no counter state: the counter memory around it reads
// a counter block for each line and writes back o_cnt after a write.
//
// Semantics are those of the C engine (hw/mem/nfabric/nfabric_engine.c,
// docs/engine.md), bit for bit:
//   G-Binary write  bit 1: +1, bit 0: -1 on each covered element's count
//   G-Binary read   count > 0: 1, < 0: 0, = 0: the tie rule (0 neg, 1 pos)
//   G-Ternary write 01: +1, 11: -1, 00: 0, 10 (reserved): 0 and counted
//   G-Ternary read  sum >= T: 01, sum <= -T: 11, else 00
//   counters        signed little-endian, width 8 or 16, saturating
//   configuration   checked as nfabric_agg_check(): o_err is its code
//                   (PATH 4, WIDTH 5, THRESHOLD 6, TIE 7) and a refused
//                   line changes nothing and reads as zero.
// Data byte b of the line covers elements 8b..8b+7 (G-Binary) or 4b..4b+3
// (G-Ternary); a byte with i_be[b] = 0 changes no counter, adds no
// reserved code, and reads as 0.  So any access of the engine, [off,
// off + len) at any alignment, is a line with a contiguous byte mask.
//
// Lanes.  The counter bus is LANES lanes of 16 bits (counter bytes 2j and
// 2j+1 in lane j).  At width 16 a lane holds one counter, at width 8 two
// (its low and high byte), so the adders are 16-bit adders that split at
// bit 8.  Lane j takes the data bits of its elements:
//   G-Binary w16   bit j              (LANES elements, all lanes)
//   G-Binary w8    bits 2j, 2j+1      (lanes 0 .. LANES/2-1)
//   G-Ternary w16  bits 2j+1:2j       (lanes 0 .. LANES/2-1)
//   G-Ternary w8   bits 4j+3:4j       (lanes 0 .. LANES/4-1)
//
// Pipeline (docs/rtl.md has the diagram); every stage ends in a register:
//   S1 IN    register the line and its counters; check and decode the
//            configuration on the way in (mode, T - 1)
//   S2 DEC   per-lane element expansion,
//            saturation detect (count at max/min), read-out comparators
//            (> 0, = 0, >= T, <= -T), per-byte reserved-code counts
//   S3 ADDL  low byte of every lane's add (carry out to S4); read-out
//            crossbar (lane results to line bit positions); reserved
//            codes summed per 8 data bytes
//   S4 ADDH  high byte of every lane's add (carry in from S3, or split
//            at width 8); reserved-code total
//   S5 OUT   output register
// The latency is what the testbench measures from i_valid to o_valid
// (tests/rtl/nf_agg_tb.cpp); nothing in this file states it.
`default_nettype none

module nf_agg #(
    parameter LANES = 512,      // data bits per line = 16-bit counter lanes
    parameter TAGW  = 16        // width of the tag carried with each line
) (
    input  wire                  clk,
    input  wire                  rst,           // synchronous, clears valids
    // line in
    input  wire                  i_valid,
    input  wire                  i_write,       // 1 write (update), 0 read
    input  wire [3:0]            i_path,        // WCTRL.PATH
    input  wire [7:0]            i_width,       // WCTRL.WIDTH (bits)
    input  wire [3:0]            i_tie,         // WCTRL.TIE
    input  wire [31:0]           i_thr,         // THRESHOLD
    input  wire [LANES/8-1:0]    i_be,          // data byte enables
    input  wire [LANES-1:0]      i_data,        // packed signs / codes
    input  wire [LANES*16-1:0]   i_cnt,         // counter bytes of the line
    input  wire [TAGW-1:0]       i_tag,
    // line out
    output reg                   o_valid,
    output reg                   o_write,
    output reg  [TAGW-1:0]       o_tag,
    output reg  [3:0]            o_err,         // 0 or the refusal's code
    output reg  [LANES-1:0]      o_rdata,       // read-out (0 for writes)
    output reg  [LANES*16-1:0]   o_cnt,         // counters after the line
    output reg  [15:0]           o_reserved     // reserved codes written
);

    localparam NB = LANES / 8;              // data bytes per line
    localparam NG = (NB + 7) / 8;           // groups of 8 data bytes

    localparam [3:0] PATH_GBINARY  = 4'd1;
    localparam [3:0] PATH_GTERNARY = 4'd2;
    localparam [3:0] ERR_NONE      = 4'd0;
    localparam [3:0] ERR_PATH      = 4'd4;
    localparam [3:0] ERR_WIDTH     = 4'd5;
    localparam [3:0] ERR_THRESHOLD = 4'd6;
    localparam [3:0] ERR_TIE       = 4'd7;

    integer b1, b2, g1, g2;

    // ------------------------------------------------------------ S1 IN
    // The configuration check, in nfabric_window_check_fields()'s order,
    // is done on the way in: a few gates per line, registered with it, so
    // that S2's lanes see decoded modes and T - 1 rather than the fields.
    wire in_bin  = i_path == PATH_GBINARY;
    wire in_ter  = i_path == PATH_GTERNARY;
    wire in_w8   = i_width == 8'd8;
    wire in_w16  = i_width == 8'd16;
    wire in_thr_bad = i_thr == 32'd0 ||
                      (in_w8 ? i_thr > 32'd127 : i_thr > 32'd32767);
    wire [3:0] in_err = !(in_bin || in_ter) ? ERR_PATH :
                        !(in_w8 || in_w16)  ? ERR_WIDTH :
                        in_bin ? (i_tie > 4'd1 ? ERR_TIE : ERR_NONE) :
                                 (in_thr_bad ? ERR_THRESHOLD : ERR_NONE);
    wire in_ok = in_err == ERR_NONE;

    reg                 s1_valid, s1_write;
    reg [3:0]           s1_err;
    reg                 s1_b16, s1_b8, s1_t16, s1_t8;   // modes, 0 if refused
    reg                 s1_tie_pos;
    reg [15:0]          s1_thr, s1_thr_m1;              // T, T - 1 (T <= 32767)
    reg [NB-1:0]        s1_be;
    reg [LANES-1:0]     s1_data;
    reg [LANES*16-1:0]  s1_cnt;
    reg [TAGW-1:0]      s1_tag;

    always @(posedge clk) begin
        if (rst)
            s1_valid <= 1'b0;
        else
            s1_valid <= i_valid;
        s1_write   <= i_write;
        s1_err     <= in_err;
        s1_b16     <= in_ok & in_bin & in_w16;
        s1_b8      <= in_ok & in_bin & in_w8;
        s1_t16     <= in_ok & in_ter & in_w16;
        s1_t8      <= in_ok & in_ter & in_w8;
        s1_tie_pos <= i_tie[0];
        s1_thr     <= i_thr[15:0];
        s1_thr_m1  <= i_thr[15:0] - 16'd1;
        s1_be      <= i_be;
        s1_data    <= i_data;
        s1_cnt     <= i_cnt;
        s1_tag     <= i_tag;
    end

    // ----------------------------------------------------------- S2 DEC
    wire [3:0] err = s1_err;
    wire ok    = err == ERR_NONE;
    // Modes (one-hot when ok): which lanes hold which elements.
    wire m_b16 = s1_b16;
    wire m_b8  = s1_b8;
    wire m_t16 = s1_t16;
    wire m_t8  = s1_t8;
    wire is_ter = m_t16 | m_t8;
    wire wide  = m_b16 | m_t16;             // one 16-bit counter per lane
    wire upd   = ok & s1_write;             // counters change
    wire rd    = ok & ~s1_write;            // read-out produced
    wire       tie_pos = s1_tie_pos;
    wire [15:0] thr    = s1_thr;
    wire [15:0] thr_m1 = s1_thr_m1;

    reg                 s2_valid, s2_write, s2_wide;
    reg [3:0]           s2_err;
    reg [TAGW-1:0]      s2_tag;
    reg [1:0]           s2_rmode;           // 0 b16, 1 b8/t16, 2 t8
    reg [LANES*16-1:0]  s2_x;               // counters
    reg [LANES-1:0]     s2_step_lo, s2_dec_lo, s2_step_hi, s2_dec_hi;
    reg [LANES*4-1:0]   s2_res;             // per-lane read-out bits
    reg [NB*3-1:0]      s2_rcnt;            // reserved codes per byte

    genvar j;
    generate
        for (j = 0; j < LANES; j = j + 1) begin : lane
            wire [15:0] x = s1_cnt[16*j +: 16];
            // This lane's data bits and data byte under each mode.
            wire [3:0] dl;
            wire       be;
            if (2 * j + 1 < LANES && 4 * j + 3 < LANES) begin : all4
                assign dl = m_b16 ? {3'b000, s1_data[j]} :
                            m_t8  ? s1_data[4*j +: 4] :
                                    {2'b00, s1_data[2*j +: 2]};
                assign be = m_b16 ? s1_be[j/8] :
                            m_t8  ? s1_be[j/2] : s1_be[j/4];
            end else if (2 * j + 1 < LANES) begin : two
                assign dl = m_b16 ? {3'b000, s1_data[j]} :
                            m_t8  ? 4'b0000 : {2'b00, s1_data[2*j +: 2]};
                assign be = m_b16 ? s1_be[j/8] :
                            m_t8  ? 1'b0 : s1_be[j/4];
            end else begin : one
                assign dl = m_b16 ? {3'b000, s1_data[j]} : 4'b0000;
                assign be = m_b16 ? s1_be[j/8] : 1'b0;
            end
            // Elements: lo (the 16-bit counter, or the low byte's) and hi.
            wire act_lo = m_t16 | m_t8 ? dl[0] : 1'b1;
            wire dec_lo = m_t16 | m_t8 ? dl[1] & dl[0] : ~dl[0];
            wire act_hi = m_t8 ? dl[2] : 1'b1;
            wire dec_hi = m_t8 ? dl[3] & dl[2] : ~dl[1];
            // Saturation: a step that would leave the range is dropped.
            wire sat16  = dec_lo ? x == 16'h8000 : x == 16'h7fff;
            wire sat_lo = dec_lo ? x[7:0] == 8'h80 : x[7:0] == 8'h7f;
            wire sat_hi = dec_hi ? x[15:8] == 8'h80 : x[15:8] == 8'h7f;
            wire live   = upd & be;     // be is 0 in lanes a mode leaves unused
            wire step_lo = live & act_lo & ~(wide ? sat16 : sat_lo);
            wire step_hi = live & ~wide & act_hi & ~sat_hi;
            // Read-out comparators.
            wire gt0_16 = ~x[15] & (|x);
            wire eq0_16 = ~(|x);
            wire gt0_lo = ~x[7] & (|x[7:0]);
            wire eq0_lo = ~(|x[7:0]);
            wire gt0_hi = ~x[15] & (|x[15:8]);
            wire eq0_hi = ~(|x[15:8]);
            // x >= T  <=>  x - T >= 0;  x <= -T  <=>  x + (T - 1) < 0
            wire [16:0] ge16_d = {x[15], x} - {1'b0, thr};
            wire [16:0] le16_d = {x[15], x} + {1'b0, thr_m1};
            wire [8:0]  gelo_d = {x[7], x[7:0]} - {1'b0, thr[7:0]};
            wire [8:0]  lelo_d = {x[7], x[7:0]} + {1'b0, thr_m1[7:0]};
            wire [8:0]  gehi_d = {x[15], x[15:8]} - {1'b0, thr[7:0]};
            wire [8:0]  lehi_d = {x[15], x[15:8]} + {1'b0, thr_m1[7:0]};
            wire pos16 = gt0_16 | (eq0_16 & tie_pos);
            wire poslo = gt0_lo | (eq0_lo & tie_pos);
            wire poshi = gt0_hi | (eq0_hi & tie_pos);
            // Codes: 01 (ge), 11 (le), 00: bit 0 = ge | le, bit 1 = le.
            wire ge16 = ~ge16_d[16], le16 = le16_d[16];
            wire gelo = ~gelo_d[8],  lelo = lelo_d[8];
            wire gehi = ~gehi_d[8],  lehi = lehi_d[8];
            wire [3:0] res = m_b16 ? {3'b000, pos16} :
                             m_b8  ? {2'b00, poshi, poslo} :
                             m_t16 ? {2'b00, le16, ge16 | le16} :
                                     {lehi, gehi | lehi, lelo, gelo | lelo};
            wire       rlive = rd & be;

            always @(posedge clk) begin
                s2_x[16*j +: 16] <= x;
                s2_step_lo[j]    <= step_lo;
                s2_dec_lo[j]     <= dec_lo;
                s2_step_hi[j]    <= step_hi;
                s2_dec_hi[j]     <= dec_hi;
                s2_res[4*j +: 4] <= rlive ? res : 4'b0000;
            end
        end
    endgenerate

    // Reserved codes (10) per data byte, ternary writes only.
    always @(posedge clk) begin
        for (b1 = 0; b1 < NB; b1 = b1 + 1)
            s2_rcnt[3*b1 +: 3] <= (upd & is_ter & s1_be[b1]) ?
                ({2'b00, s1_data[8*b1+1] & ~s1_data[8*b1]} +
                 {2'b00, s1_data[8*b1+3] & ~s1_data[8*b1+2]} +
                 {2'b00, s1_data[8*b1+5] & ~s1_data[8*b1+4]} +
                 {2'b00, s1_data[8*b1+7] & ~s1_data[8*b1+6]}) : 3'd0;
    end

    always @(posedge clk) begin
        if (rst)
            s2_valid <= 1'b0;
        else
            s2_valid <= s1_valid;
        s2_write <= s1_write;
        s2_wide  <= wide;
        s2_err   <= err;
        s2_tag   <= s1_tag;
        s2_rmode <= m_b16 ? 2'd0 : m_t8 ? 2'd2 : 2'd1;
    end

    // ---------------------------------------------------------- S3 ADDL
    reg                 s3_valid, s3_write, s3_wide;
    reg [3:0]           s3_err;
    reg [TAGW-1:0]      s3_tag;
    reg [LANES*16-1:0]  s3_x;               // low bytes added
    reg [LANES-1:0]     s3_carry, s3_step_hi, s3_dec_hi, s3_step16, s3_dec16;
    reg [LANES-1:0]     s3_rdata;
    reg [NG*6-1:0]      s3_rgrp;            // reserved codes per 8 bytes
    reg [NG*6-1:0]      gsum;

    generate
        for (j = 0; j < LANES; j = j + 1) begin : addl
            // Low byte: + 0x01, + 0xff (-1) or nothing.
            wire [7:0] addend = s2_step_lo[j] ?
                                (s2_dec_lo[j] ? 8'hff : 8'h01) : 8'h00;
            wire [8:0] lo = {1'b0, s2_x[16*j +: 8]} + {1'b0, addend};
            // Read-out crossbar: bit j of the line from lane j, j/2 or j/4.
            wire rbit = s2_rmode == 2'd0 ? s2_res[4*j] :
                        s2_rmode == 2'd1 ? s2_res[4*(j/2) + (j%2)] :
                                           s2_res[4*(j/4) + (j%4)];
            always @(posedge clk) begin
                s3_x[16*j +: 16] <= {s2_x[16*j+8 +: 8], lo[7:0]};
                s3_carry[j]      <= lo[8];
                s3_step_hi[j]    <= s2_step_hi[j];
                s3_dec_hi[j]     <= s2_dec_hi[j];
                s3_step16[j]     <= s2_step_lo[j];
                s3_dec16[j]      <= s2_dec_lo[j];
                s3_rdata[j]      <= rbit;
            end
        end
    endgenerate

    always @* begin
        gsum = {NG*6{1'b0}};
        for (g1 = 0; g1 < NG; g1 = g1 + 1)
            for (b2 = 8 * g1; b2 < 8 * g1 + 8; b2 = b2 + 1)
                if (b2 < NB)
                    gsum[6*g1 +: 6] = gsum[6*g1 +: 6] +
                                      {3'b000, s2_rcnt[3*b2 +: 3]};
    end

    always @(posedge clk)
        s3_rgrp <= gsum;

    always @(posedge clk) begin
        if (rst)
            s3_valid <= 1'b0;
        else
            s3_valid <= s2_valid;
        s3_write <= s2_write;
        s3_wide  <= s2_wide;
        s3_err   <= s2_err;
        s3_tag   <= s2_tag;
    end

    // ---------------------------------------------------------- S4 ADDH
    reg                 s4_valid, s4_write;
    reg [3:0]           s4_err;
    reg [TAGW-1:0]      s4_tag;
    reg [LANES*16-1:0]  s4_x;
    reg [LANES-1:0]     s4_rdata;
    reg [15:0]          s4_reserved;
    reg [15:0]          rsum;

    generate
        for (j = 0; j < LANES; j = j + 1) begin : addh
            // Width 16: the high byte of x + 0x0001 / 0xffff with the low
            // byte's carry.  Width 8: its own +1 / -1, no carry in.
            wire [7:0] addend = s3_wide ?
                                ((s3_step16[j] & s3_dec16[j]) ? 8'hff : 8'h00) :
                                (s3_step_hi[j] ?
                                 (s3_dec_hi[j] ? 8'hff : 8'h01) : 8'h00);
            wire       cin = s3_wide & s3_step16[j] & s3_carry[j];
            wire [7:0] hi = s3_x[16*j+8 +: 8] + addend + {7'd0, cin};
            always @(posedge clk) begin
                s4_x[16*j +: 16] <= {hi, s3_x[16*j +: 8]};
                s4_rdata[j]      <= s3_rdata[j];
            end
        end
    endgenerate

    always @* begin
        rsum = 16'd0;
        for (g2 = 0; g2 < NG; g2 = g2 + 1)
            rsum = rsum + {10'd0, s3_rgrp[6*g2 +: 6]};
    end

    always @(posedge clk)
        s4_reserved <= rsum;

    always @(posedge clk) begin
        if (rst)
            s4_valid <= 1'b0;
        else
            s4_valid <= s3_valid;
        s4_write <= s3_write;
        s4_err   <= s3_err;
        s4_tag   <= s3_tag;
    end

    // ----------------------------------------------------------- S5 OUT
    always @(posedge clk) begin
        if (rst)
            o_valid <= 1'b0;
        else
            o_valid <= s4_valid;
        o_write    <= s4_write;
        o_err      <= s4_err;
        o_tag      <= s4_tag;
        o_cnt      <= s4_x;
        o_rdata    <= s4_rdata;
        o_reserved <= s4_reserved;
    end

endmodule

`default_nettype wire
